// emisor console: the little script the pages need. No inline code (the
// Content-Security-Policy allows only this file), no library.
"use strict";

// A form with data-confirm asks before it is sent.
document.addEventListener("submit", function (e) {
  var form = e.target;
  var question = form.getAttribute && form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    e.preventDefault();
  }
});

// A select with data-autosubmit sends its form when it changes.
document.addEventListener("change", function (e) {
  var el = e.target;
  if (el.getAttribute && el.getAttribute("data-autosubmit") && el.form) {
    el.form.submit();
  }
});

// Live pages: when the stream of the signed-in console tells of a change, fetch the page
// again and replace its <main> (at most one refresh in flight, and at most
// one a second).
(function () {
  if (!document.body || !document.body.hasAttribute("data-live") || !window.EventSource) {
    return;
  }
  var status = document.getElementById("live-status");
  var pending = false;
  var busy = false;
  function refresh() {
    if (busy) { pending = true; return; }
    busy = true;
    fetch(window.location.href, { credentials: "same-origin", headers: { "X-Console-Refresh": "1" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) { return; }
        var next = new DOMParser().parseFromString(html, "text/html").getElementById("main");
        var current = document.getElementById("main");
        var focused = document.activeElement;
        // Not while the user types in a field of the page.
        if (next && current && !(focused && current.contains(focused) && /INPUT|SELECT|TEXTAREA/.test(focused.tagName))) {
          current.replaceWith(next);
          document.body.setAttribute("data-refreshed", String(Date.now()));
        }
      })
      .catch(function () {})
      .then(function () {
        setTimeout(function () {
          busy = false;
          if (pending) { pending = false; refresh(); }
        }, 1000);
      });
  }
  var source = new EventSource("/console/stream");
  source.onopen = function () { if (status) { status.setAttribute("data-state", "open"); } };
  source.onerror = function () { if (status) { status.setAttribute("data-state", "retrying"); } };
  source.onmessage = function () { refresh(); };
})();
