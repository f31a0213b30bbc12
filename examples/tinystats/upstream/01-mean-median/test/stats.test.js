'use strict';
const assert = require('node:assert');
const test = require('node:test');
const { mean, median } = require('../src/stats');

test('mean of integers', () => {
  assert.strictEqual(mean([1, 2, 3, 4]), 2.5);
});

test('mean of an empty list throws', () => {
  assert.throws(() => mean([]), RangeError);
});

test('median odd and even', () => {
  assert.strictEqual(median([3, 1, 2]), 2);
  assert.strictEqual(median([4, 1, 3, 2]), 2.5);
});
