// portwright pages: keep open <details> open when htmx swaps a live part of the page.
(function () {
  var open = [];
  function key(el) {
    return el.id || el.getAttribute("data-path") || el.getAttribute("data-role") || null;
  }
  document.addEventListener("htmx:beforeSwap", function (evt) {
    open = [];
    evt.detail.target.querySelectorAll("details[open]").forEach(function (el) {
      var k = key(el);
      if (k) { open.push(k); }
    });
  });
  document.addEventListener("htmx:afterSettle", function (evt) {
    document.querySelectorAll("details").forEach(function (el) {
      var k = key(el);
      if (k && open.indexOf(k) >= 0) { el.open = true; }
    });
  });
})();
