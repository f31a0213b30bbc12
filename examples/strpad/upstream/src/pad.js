// Pad text to a number of terminal columns: wide (East Asian) characters take two.
"use strict";

function charWidth(ch) {
  const code = ch.codePointAt(0);
  if (code === 0) return 0;
  if (code < 32 || (code >= 0x7f && code < 0xa0)) return -1;
  if (code >= 0x300 && code <= 0x36f) return 0; // combining marks
  const wide = (code >= 0x1100 && code <= 0x115f) || (code >= 0x2e80 && code <= 0xa4cf) ||
    (code >= 0xac00 && code <= 0xd7a3) || (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0xfe30 && code <= 0xfe4f) || (code >= 0xff00 && code <= 0xff60) ||
    (code >= 0xffe0 && code <= 0xffe6) || (code >= 0x1f300 && code <= 0x1faff);
  return wide ? 2 : 1;
}

function displayWidth(text) {
  let total = 0;
  for (const ch of text) {
    const w = charWidth(ch);
    if (w < 0) throw new RangeError("control character in text");
    total += w;
  }
  return total;
}

function padEnd(text, columns, fill = " ") {
  if (displayWidth(fill) !== 1) throw new RangeError("fill must be one column wide");
  const missing = columns - displayWidth(text);
  return missing > 0 ? text + fill.repeat(missing) : text;
}

module.exports = { displayWidth, padEnd };
