// loch serve: the grid loads its rows a page at a time as it scrolls.
"use strict";
(function () {
  function bars(root) {
    root.querySelectorAll(".fill[data-pct]").forEach(function (el) {
      el.style.width = el.dataset.pct + "%";
    });
  }
  bars(document);
  var grid = document.getElementById("grid");
  var more = document.getElementById("more");
  if (!grid || !more) return;
  var next = grid.dataset.src;
  var busy = false;
  function load() {
    if (busy || !next) return;
    busy = true;
    var url = next;
    next = null;
    fetch(url, { credentials: "same-origin" }).then(function (r) {
      return r.text().then(function (t) {
        if (!r.ok) throw new Error(t);
        return t;
      });
    }).then(function (html) {
      grid.insertAdjacentHTML("beforeend", html);
      var n = grid.querySelector(".next");
      if (n) {
        next = n.dataset.next;
        n.remove();
        more.textContent = "loading…";
      } else {
        more.textContent = grid.children.length + " rows shown";
        more.classList.add("done");
      }
      busy = false;
      if (next && visible()) load();
    }).catch(function (e) {
      more.textContent = "error: " + e.message;
      more.classList.add("error");
      busy = false;
    });
  }
  function visible() {
    var r = more.getBoundingClientRect();
    return r.top < window.innerHeight + 400;
  }
  new IntersectionObserver(function (es) {
    if (es.some(function (e) { return e.isIntersecting; })) load();
  }, { rootMargin: "400px" }).observe(more);
  load();
})();
