'use strict';

function mean(values) {
  if (values.length === 0) {
    throw new RangeError('mean of an empty list');
  }
  let total = 0;
  for (const v of values) total += v;
  return total / values.length;
}

function median(values) {
  if (values.length === 0) {
    throw new RangeError('median of an empty list');
  }
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

module.exports = { mean, median };
