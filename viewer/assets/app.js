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
  // failures counts the page's failed fetches in a row: a network error,
  // a 5xx, 408 or 429 is tried again after a growing pause, five times,
  // before the error is shown with a button that tries once more.
  var failures = 0;
  function load() {
    if (busy || !next) return;
    busy = true;
    var url = next;
    fetch(url, { credentials: "same-origin" }).then(function (r) {
      return r.text().then(function (t) {
        if (!r.ok) {
          var e = new Error(t.trim() || r.statusText);
          e.status = r.status;
          throw e;
        }
        return t;
      });
    }).then(function (html) {
      failures = 0;
      next = null;
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
      if (!next) return;
      if (visible()) {
        load();
      } else {
        // The observer reports changes only: had the reader scrolled the
        // marker out and back before its next frame, it would say nothing
        // and the grid would stop. Observing anew reports the state as it
        // is then.
        seen.unobserve(more);
        seen.observe(more);
      }
    }).catch(function (e) {
      busy = false;
      failures++;
      var transient = !e.status || e.status >= 500 || e.status === 408 || e.status === 429;
      if (transient && failures <= 5) {
        more.textContent = "loading… (retrying: " + e.message + ")";
        setTimeout(load, 250 * Math.pow(2, failures));
        return;
      }
      more.textContent = "error: " + e.message + " ";
      more.classList.add("error");
      var b = document.createElement("button");
      b.type = "button";
      b.textContent = "try again";
      b.addEventListener("click", function () {
        failures = 0;
        more.classList.remove("error");
        more.textContent = "loading…";
        load();
      });
      more.appendChild(b);
    });
  }
  function visible() {
    var r = more.getBoundingClientRect();
    return r.top < window.innerHeight + 400;
  }
  var seen = new IntersectionObserver(function (es) {
    if (es.some(function (e) { return e.isIntersecting; })) load();
  }, { rootMargin: "400px" });
  seen.observe(more);
  load();
})();
