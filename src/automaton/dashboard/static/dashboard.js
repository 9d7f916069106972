// automaton dashboard. Two jobs, nothing else (the forms are plain HTML forms):
//
// 1. The form key. The login answer carries the session's key once (body data-key); it is kept
//    in localStorage, which belongs to this origin (port included), unlike the session cookie,
//    which every server on another port of this host receives. Every form has a hidden `key`
//    field, filled here on submit; the server refuses a form without it. Logging out forgets it.
// 2. Live refresh. Every element with a data-fragment URL is re-fetched every 2 s from the same
//    origin and its HTML replaced when it changed (the server renders and escapes it).
(function () {
  "use strict";
  var PERIOD_MS = 2000;
  var STORE = "automaton-dashboard-key";
  var last = new WeakMap();
  var body = document.body;

  var handed = body.getAttribute("data-key");
  if (handed) {
    body.removeAttribute("data-key");
    try {
      window.localStorage.setItem(STORE, handed);
    } catch (err) {
      var note = document.getElementById("login-note");
      if (note) {
        note.textContent = "This browser does not let the page keep its key (localStorage is off): the pages" +
          " can be read, but no form of this dashboard will be accepted.";
      }
      return;
    }
    var next = body.getAttribute("data-next") || "/";
    window.location.replace(next.charAt(0) === "/" ? next : "/");
    return;
  }

  function storedKey() {
    try {
      return window.localStorage.getItem(STORE) || "";
    } catch (err) {
      return "";
    }
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement)) {
      return;
    }
    var field = form.querySelector('input[name="key"]');
    if (field) {
      field.value = storedKey();
    }
    if (form.hasAttribute("data-logout")) {
      try {
        window.localStorage.removeItem(STORE);
      } catch (err) {
        // nothing kept, nothing to forget
      }
    }
  }, true);

  function refresh(el) {
    var url = el.getAttribute("data-fragment");
    if (!url || url.charAt(0) !== "/") {
      return;
    }
    fetch(url, { credentials: "same-origin", cache: "no-store", headers: { "Accept": "text/html" } })
      .then(function (response) {
        if (!response.ok) {
          throw new Error(String(response.status));
        }
        return response.text();
      })
      .then(function (html) {
        document.body.classList.remove("stale");
        if (last.get(el) !== html) {
          last.set(el, html);
          el.innerHTML = html;
        }
      })
      .catch(function () {
        document.body.classList.add("stale");
      });
  }

  function tick() {
    if (document.hidden) {
      return;
    }
    document.querySelectorAll("[data-fragment]").forEach(refresh);
  }

  window.setInterval(tick, PERIOD_MS);
})();
