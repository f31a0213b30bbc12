"use strict";
const assert = require("node:assert");
const { displayWidth, padEnd } = require("../src/pad");

assert.strictEqual(displayWidth("abc"), 3);
assert.strictEqual(displayWidth("日本"), 4);
assert.strictEqual(padEnd("日本", 6), "日本  ");
assert.strictEqual(padEnd("abc", 2), "abc");
assert.strictEqual(padEnd("ab", 4, "."), "ab..");
assert.throws(() => padEnd("ab", 4, "日"), RangeError);
assert.throws(() => displayWidth("a\u0007"), RangeError);
