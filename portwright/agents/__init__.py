"""The model layer and the four agent roles.

Modules:

- :mod:`~portwright.agents.llm`: messages, tool specs, usage and the ``LLMClient`` protocol;
- :mod:`~portwright.agents.openai_client`: Chat Completions over the openai SDK (OpenAI,
  vLLM, llama.cpp, Ollama), refusing real endpoints while ``PORTWRIGHT_REFUSE_REAL_MODELS``
  is set;
- :mod:`~portwright.agents.offline`: the scripted model, the cassette recorder and player;
- :mod:`~portwright.agents.models`: the client a run uses, from ``[model]`` and
  ``--record`` / ``--replay``;
- :mod:`~portwright.agents.budget`: per-run and per-role budgets, cost from the price table;
- :mod:`~portwright.agents.tools`: the tools and the workspace that confines them;
- :mod:`~portwright.agents.evidence`: the evidence engines as tool sources;
- :mod:`~portwright.agents.loop`: the bounded agent loop and structured questions;
- :mod:`~portwright.agents.transcript`: the JSONL transcript of a turn;
- :mod:`~portwright.agents.prompting`: templates, cited excerpts, context ceilings;
- :mod:`~portwright.agents.results`: the structured results of the roles;
- :mod:`~portwright.agents.roles`: gap verifier, enumerator, implementer, fresh reviewer.
"""
