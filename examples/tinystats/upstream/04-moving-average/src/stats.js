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

function clamp(value, lo, hi) {
  if (lo > hi) {
    throw new RangeError('clamp: lo must not exceed hi');
  }
  return Math.min(Math.max(value, lo), hi);
}

const WINDOW_MODES = ['trailing', 'centered'];

function movingAverage(values, windowSize = 3, { mode = 'trailing', minPeriods = null } = {}) {
  if (!Number.isInteger(windowSize) || windowSize < 1) {
    throw new RangeError('movingAverage: windowSize must be a positive integer');
  }
  if (!WINDOW_MODES.includes(mode)) {
    throw new TypeError(`movingAverage: unknown mode ${mode}`);
  }
  const need = minPeriods === null ? windowSize : minPeriods;
  const out = [];
  for (let i = 0; i < values.length; i++) {
    let start = i - windowSize + 1;
    let end = i + 1;
    if (mode === 'centered') {
      start = i - Math.floor(windowSize / 2);
      end = start + windowSize;
    }
    const window = values.slice(Math.max(start, 0), Math.min(end, values.length));
    out.push(window.length >= need ? mean(window) : null);
  }
  return out;
}

module.exports = { mean, median, clamp, movingAverage };
