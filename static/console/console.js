// The shift page's live parts. Everything here is an enhancement: without it the
// page still works (htmx swaps the header after each call and polls the shift bar).

// The last operation of a window moves the world on: ask first.
// (end_window and destructive tools carry their own hx-confirm.)
document.addEventListener("htmx:confirm", function (evt) {
  var form = evt.detail.elt;
  if (!form || !form.dataset || form.dataset.spends !== "1" || evt.detail.question) return;
  var header = document.getElementById("store-header");
  if (!header || header.dataset.opsLeft !== "1") return;
  evt.preventDefault();
  if (window.confirm("This is the last operation of the window: after this call the store moves on to the next window. Continue?")) {
    evt.detail.issueRequest(true);
  }
});

// Countdown to the wall-clock deadline, re-anchored whenever the server says how
// many seconds are left (page load, htmx poll, websocket push).
(function () {
  var target = null;
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function format(s) {
    s = Math.max(0, Math.floor(s));
    return Math.floor(s / 3600) + ":" + pad(Math.floor(s % 3600 / 60)) + ":" + pad(s % 60);
  }
  function anchor() {
    var el = document.getElementById("countdown");
    if (el && el.dataset.secondsLeft !== undefined) {
      target = Date.now() + parseInt(el.dataset.secondsLeft, 10) * 1000;
    }
  }
  function tick() {
    var el = document.getElementById("countdown");
    if (!el || target === null) return;
    var left = (target - Date.now()) / 1000;
    el.textContent = format(left);
    if (left <= 0 && !tick.reloading) {
      tick.reloading = true;
      setTimeout(function () { window.location.reload(); }, 1500);  // the server ends the shift
    }
  }
  document.addEventListener("DOMContentLoaded", function () { anchor(); tick(); setInterval(tick, 1000); });
  document.addEventListener("htmx:afterSettle", anchor);
  window.storebenchAnchorCountdown = anchor;
})();

// Websocket: the server pushes the store header and the countdown.
(function () {
  function connect(top, attempt) {
    var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    var socket;
    try { socket = new WebSocket(scheme + window.location.host + top.dataset.ws); }
    catch (e) { return; }
    var state = document.getElementById("live-state");
    socket.onopen = function () {
      attempt = 0;
      document.body.dataset.live = "websocket";
      if (state) state.textContent = "live";
    };
    socket.onmessage = function (evt) {
      var msg = JSON.parse(evt.data);
      if (msg.type !== "state") return;
      if (msg.status === "ended" || msg.status !== top.dataset.status) {
        window.location.assign(msg.url);  // ended, paused or resumed elsewhere: reload the page's mode
        return;
      }
      var header = document.getElementById("store-header");
      if (header && msg.header_html) {
        header.outerHTML = msg.header_html;
      }
      var countdown = document.getElementById("countdown");
      if (countdown) {
        countdown.dataset.secondsLeft = msg.seconds_left;
        window.storebenchAnchorCountdown();
      }
    };
    socket.onclose = function () {
      document.body.dataset.live = "polling";
      if (state) state.textContent = "polling";
      if (top.dataset.status === "ended") return;
      setTimeout(function () { connect(top, attempt + 1); }, Math.min(30000, 2000 * (attempt + 1)));
    };
  }
  document.addEventListener("DOMContentLoaded", function () {
    var top = document.getElementById("shift-top");
    if (top && top.dataset.ws && window.WebSocket) connect(top, 0);
  });
})();
