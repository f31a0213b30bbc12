"""The model layer and the agent roles: clients, budgets, tools, the loop, transcripts."""
