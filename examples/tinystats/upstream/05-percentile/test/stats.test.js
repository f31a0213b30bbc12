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

test('clamp keeps bounds inclusive', () => {
  const { clamp } = require('../src/stats');
  assert.strictEqual(clamp(5, 0, 5), 5);
  assert.strictEqual(clamp(-1, 0, 5), 0);
  assert.throws(() => clamp(1, 3, 2), RangeError);
});

test('movingAverage trailing window', () => {
  const { movingAverage } = require('../src/stats');
  assert.deepStrictEqual(movingAverage([1, 2, 3, 4], 2), [null, 1.5, 2.5, 3.5]);
});

test('movingAverage centered window with minPeriods', () => {
  const { movingAverage } = require('../src/stats');
  assert.deepStrictEqual(
    movingAverage([1, 2, 3, 4], 3, { mode: 'centered', minPeriods: 2 }),
    [1.5, 2, 3, 3.5],
  );
});

test('movingAverage rejects a bad window and mode', () => {
  const { movingAverage } = require('../src/stats');
  assert.throws(() => movingAverage([1], 0), RangeError);
  assert.throws(() => movingAverage([1], 2, { mode: 'leading' }), TypeError);
});

test('percentile interpolates between ranks', () => {
  const { percentile } = require('../src/stats');
  assert.strictEqual(percentile([1, 2, 3, 4], 50), 2.5);
  assert.throws(() => percentile([1], 101), RangeError);
});
