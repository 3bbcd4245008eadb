// The shift page's live parts. Everything here is an enhancement: without it the
// page still works (htmx swaps the header after each call and polls the shift bar).

// The forms matching ``selector`` in ``root``, ``root`` itself included (a swap may bring a
// form as its own root); none for a text node.
function storebenchForms(root, selector) {
  if (!root || !root.querySelectorAll) return [];
  var forms = Array.prototype.slice.call(root.querySelectorAll(selector || "form"));
  if (root.matches && root.matches(selector || "form")) forms.push(root);
  return forms;
}

// The last operation of a window moves the world on: ask first. A form with its own
// question (a destructive tool, a reorder landing after the close) gets one dialog that
// asks both. end_window's question names the window it ends, so that a second press
// (after the first has moved the store on) is seen to end the next one.
// A form's own question answered yes is a press made on purpose: it is sent as a new call
// even within the moment a form keeps its last call's id (below), so that ending two windows
// one after the other ends two.
document.addEventListener("htmx:confirm", function (evt) {
  var form = evt.detail.elt;
  if (!form || !form.dataset || form.dataset.spends !== "1") return;
  var header = document.getElementById("store-header");
  var question = evt.detail.question, own = !!question;
  var tool = form.querySelector && form.querySelector("input[name=tool]");
  if (tool && tool.value === "end_window" && header && question) {
    var d = header.dataset, now = parseInt(d.window, 10), left = parseInt(d.opsLeft, 10);
    if (!isNaN(now) && !isNaN(left)) {
      question = "End window " + now + " of " + d.windows + " now? " +
        (left === 1 ? "Its 1 operation left is" : "Its " + left + " operations left are") + " forfeited and the store " +
        (now < parseInt(d.windows, 10) ? "moves on to window " + (now + 1) + "." : "reaches the end of the shift.");
    }
  } else if (header && header.dataset.opsLeft === "1") {
    var last = "This is the last operation of the window: after this call the store moves on to the next window. Continue?";
    question = question ? question + "\n\n" + last : last;
  }
  if (!question) return;
  evt.preventDefault();
  if (window.confirm(question)) {
    // Its own question answered yes (End window, a destructive tool) is a press made on purpose; the
    // last operation's question alone is not: a double press there is still one call.
    if (own && window.storebenchNewCall) window.storebenchNewCall(form);
    evt.detail.issueRequest(true);
  }
});

// The shift bar's clocks: the countdown to the wall-clock deadline, and the active and
// paused time, of which the one running (active while working, paused during a break)
// ticks. Each is anchored to the server's figure when the server gives one (page load, a
// new shift bar from the htmx poll, a websocket push); a swap of another part of the page
// does not re-anchor them. Past the deadline (the bar says data-due) no clock runs: the page
// shows the server's figures until the shift's end, which it posts on load, replaces it.
(function () {
  var clocks = {  // element id -> the data attribute with the server's seconds, and its anchor
    "countdown": { key: "secondsLeft", sign: -1, at: null, base: 0 },
    "active-time": { key: "seconds", sign: 1, running: "active", at: null, base: 0 },
    "paused-time": { key: "seconds", sign: 1, running: "paused", at: null, base: 0 }
  };
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function format(s) {
    s = Math.max(0, Math.floor(s));
    return Math.floor(s / 3600) + ":" + pad(Math.floor(s % 3600 / 60)) + ":" + pad(s % 60);
  }
  function anchor(force) {
    Object.keys(clocks).forEach(function (id) {
      var el = document.getElementById(id), clock = clocks[id];
      if (!el || el.dataset[clock.key] === undefined) return;
      if (!force && el.storebenchAnchored) return;  // the same element, already anchored
      el.storebenchAnchored = true;
      clock.base = parseInt(el.dataset[clock.key], 10);
      clock.at = Date.now();
    });
  }
  function tick() {
    var bar = document.getElementById("shift-bar");
    if (bar && bar.dataset.due === "1") return;
    var status = bar ? bar.dataset.status : null;
    Object.keys(clocks).forEach(function (id) {
      var el = document.getElementById(id), clock = clocks[id];
      if (!el || clock.at === null) return;
      if (clock.running && clock.running !== status) return;  // the other one runs
      var seconds = clock.base + clock.sign * (Date.now() - clock.at) / 1000;
      el.textContent = format(seconds);
      if (id === "countdown" && seconds <= 0 && !tick.reloading) {
        tick.reloading = true;
        setTimeout(function () { window.location.reload(); }, 1500);  // the server ends the shift
      }
    });
  }
  document.addEventListener("DOMContentLoaded", function () { anchor(true); tick(); setInterval(tick, 1000); });
  document.addEventListener("htmx:afterSettle", function () { anchor(false); tick(); });
  // A websocket push: the server's figures, set on the elements, then re-anchored.
  window.storebenchAnchorClocks = function (msg) {
    var figures = { "countdown": msg.seconds_left, "active-time": msg.active_seconds, "paused-time": msg.paused_seconds };
    Object.keys(figures).forEach(function (id) {
      var el = document.getElementById(id);
      if (el && figures[id] !== undefined && figures[id] !== null) el.dataset[clocks[id].key] = figures[id];
    });
    anchor(true);
    tick();
  };
})();

// The shift bar's live indicator says how this page gets updates: "live" while the
// websocket is open, "polling" otherwise. The bar is re-fetched (every minute, and its
// markup always says "polling"), so the state is kept on the body and written back into
// each new bar.
(function () {
  function show() {
    var el = document.getElementById("live-state"), live = document.body.dataset.live;
    if (el && live) el.textContent = live === "websocket" ? "live" : "polling";
  }
  document.addEventListener("htmx:afterSwap", show);
  document.addEventListener("htmx:afterSettle", show);
  document.addEventListener("htmx:oobAfterSwap", show);
  window.storebenchShowLive = show;
})();

// A pause needs a reason: the browser's own bubble is easy to miss, so the problem is also
// written next to the field, and cleared as soon as a reason is typed.
(function () {
  function note(input) {
    var form = input.closest && input.closest("form.pause-form");
    return form ? form.querySelector(".field-problem") : null;
  }
  document.addEventListener("invalid", function (evt) {
    var box = note(evt.target);
    if (!box) return;
    box.textContent = "Give a reason for the break (a few words) to pause.";
    box.hidden = false;
    evt.target.setAttribute("aria-invalid", "true");
  }, true);  // invalid does not bubble
  document.addEventListener("input", function (evt) {
    var box = note(evt.target);
    if (box && evt.target.value.trim()) { box.hidden = true; box.textContent = ""; evt.target.removeAttribute("aria-invalid"); }
  });
})();

// Websocket: the server pushes the store header and the shift bar's clocks.
(function () {
  function connect(top, attempt) {
    var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    var socket;
    try { socket = new WebSocket(scheme + window.location.host + top.dataset.ws); }
    catch (e) { return; }
    socket.onopen = function () {
      attempt = 0;
      document.body.dataset.live = "websocket";
      window.storebenchShowLive();
    };
    socket.onmessage = function (evt) {
      var msg = JSON.parse(evt.data);
      if (msg.type !== "state" || leaving) return;
      if (msg.status === "ended" || msg.status !== top.dataset.status) {
        window.location.assign(msg.url);  // ended, paused or resumed elsewhere: reload the page's mode
        return;
      }
      if (!!msg.due !== !!document.getElementById("due-notice") && reloadForDeadline(msg.url)) return;
      var header = document.getElementById("store-header");
      if (header && msg.header_html) {
        header.outerHTML = msg.header_html;
        window.storebenchMarkInbox();
      }
      window.storebenchAnchorClocks(msg);
      window.storebenchSeen(top.dataset.shift, msg.last_seq);
      document.body.dataset.pushes = String((Number(document.body.dataset.pushes) || 0) + 1);  // applied
    };
    socket.onclose = function () {
      document.body.dataset.live = "polling";
      window.storebenchShowLive();
      if (top.dataset.status === "ended") return;
      setTimeout(function () { connect(top, attempt + 1); }, Math.min(30000, 2000 * (attempt + 1)));
    };
  }
  // Past its deadline, or given more time: load the page again, at most once in 30 s (two
  // processes whose clocks disagree by a few seconds must not make the page reload in a loop).
  function reloadForDeadline(url) {
    var key = "storebench-deadline-reload";
    try {
      if (Date.now() - (Number(window.sessionStorage.getItem(key)) || 0) < 30000) return false;
      window.sessionStorage.setItem(key, String(Date.now()));
    } catch (e) { return false; }  // no session storage: the countdown and the bar's poll still reload
    window.location.assign(url);
    return true;
  }
  // A page already on its way to the next one (a pause or resume form posts and is sent back
  // to the workspace) takes no push: the push of its own pause would load the page a second
  // time, after the new one has shown.
  var leaving = false;
  window.addEventListener("beforeunload", function () { leaving = true; });
  document.addEventListener("DOMContentLoaded", function () {
    var top = document.getElementById("shift-top");
    if (top && top.dataset.ws && window.WebSocket) connect(top, 0);
  });
})();

// Another tab's calls: when the websocket says the shift has a call this page has not
// seen, fetch the side panels (history rows after ours, the inbox, the cached views) as
// out-of-band swaps. A call made here may race its own push, so history rows are
// de-duplicated by call number after every swap.
(function () {
  // The newest call up to which this page's history holds every call (calls are numbered from
  // 1, and the page lists them all): a call made here lands at the top at once, while one made
  // elsewhere just before it comes only with the panels.
  function lastSeq() {
    var seqs = {};
    document.querySelectorAll("#history-list li[id^='call-']").forEach(function (li) {
      seqs[parseInt(li.id.slice(5), 10)] = true;
    });
    var n = 0;
    while (seqs[n + 1]) n += 1;
    return n;
  }
  var inFlight = false, again = false, waiting = [], finishing = null, retry = null;
  // Run ``fn`` once no refresh of the panels is on its way (a batch sends its next row after
  // what other tabs did has been marked, so it does not send a row already done).
  window.storebenchWhenPanelsQuiet = function (fn) {
    if (inFlight) waiting.push(fn); else fn();
  };
  function release() {
    var ready = waiting;
    waiting = [];
    ready.forEach(function (fn) { fn(); });
  }
  function refresh(shift) {
    if (inFlight) { again = true; return; }
    inFlight = true;
    again = false;
    var settled = false, watchdog;
    function finish(ok) {
      if (settled) return;
      settled = true;
      finishing = null;
      clearTimeout(watchdog);
      inFlight = false;
      if (ok && again) { refresh(shift); return; }  // a push came meanwhile: its calls too, before a batch goes on
      if (!ok && retry === null) {  // no answer, or an error: tried again in 5 s (or at the next push), not at once
        retry = setTimeout(function () { retry = null; check(); }, 5000);
      }
      release();
    }
    finishing = finish;  // told by the request's own htmx:afterRequest (below): a 4xx or 5xx is a failure
    watchdog = setTimeout(function () {  // an answer that never comes is given up, and the page freed
      htmx.trigger(document.getElementById("history"), "htmx:abort");
      finish(false);
    }, 10000);
    htmx.ajax("GET", "/shifts/" + shift + "/panels/?after=" + lastSeq(),
              { source: "#history", target: "#history", swap: "none" })
      .then(function () { finish(true); }, function () { finish(false); });
  }
  document.addEventListener("htmx:afterRequest", function (evt) {
    var elt = evt.detail && evt.detail.elt;
    if (finishing && elt && elt.id === "history") finishing(evt.detail.successful === true);
  });
  function dedupe() {
    var list = document.getElementById("history-list");
    if (!list) return;
    var seen = {};
    Array.prototype.forEach.call(list.querySelectorAll("li"), function (li) {
      if (li.classList.contains("empty") && list.querySelector("li[id^='call-']")) { li.remove(); return; }
      if (!li.id) return;
      if (seen[li.id]) li.remove(); else seen[li.id] = true;
    });
    // Newest first: another tab's call fetched after this tab's own newer one goes below it.
    var rows = Array.prototype.slice.call(list.querySelectorAll("li[id^='call-']"));
    var ordered = rows.slice().sort(function (a, b) { return parseInt(b.id.slice(5), 10) - parseInt(a.id.slice(5), 10); });
    if (ordered.some(function (li, k) { return li !== rows[k]; })) ordered.forEach(function (li) { list.appendChild(li); });
  }
  // A push that arrives while this page's own call is on its way is checked once the
  // call's answer has landed (it usually names that very call: nothing to fetch).
  var pending = 0, wanted = 0, shiftOf = null;
  function isCall(evt) {  // a form of this page making a call (not the panels' own request)
    var elt = evt.detail && evt.detail.elt;
    return !!(elt && elt.tagName === "FORM" && elt.querySelector("input[name=call_id]"));
  }
  function check() {
    if (pending === 0 && shiftOf !== null && wanted > lastSeq()) refresh(shiftOf);
  }
  document.addEventListener("htmx:beforeRequest", function (evt) { if (isCall(evt)) pending += 1; });
  document.addEventListener("htmx:afterRequest", function (evt) {
    if (isCall(evt)) { pending = Math.max(0, pending - 1); setTimeout(check, 0); }
  });
  document.addEventListener("htmx:afterSettle", dedupe);
  document.addEventListener("htmx:oobAfterSwap", dedupe);
  window.storebenchSeen = function (shift, seq) {
    shiftOf = shift;
    wanted = Math.max(wanted, seq || 0);
    check();
  };
})();

// Rows another tab acted on: the panels' answer (above) carries, by row key, what the calls
// made elsewhere did ("shipped (#12)"), with each call's number and the row actions it leaves
// nothing to do for. A row of this page's result read before that call and offering one of
// those actions is marked as the server marks a row done since its read: its actions and its
// batch tick go, so no operation is spent on a call the store would refuse. A row whose own
// call is on its way is marked once that call has its answer (its form must stay to get it).
(function () {
  var marks = {};
  function resultSeq() {
    var shown = document.querySelector("#result .result");
    return shown ? Number(shown.dataset.seq) || 0 : 0;
  }
  function apply() {
    var holder = document.getElementById("done-elsewhere");
    if (holder && holder.dataset.done && holder.dataset.done !== "{}") {
      try {
        var told = JSON.parse(holder.dataset.done);
        Object.keys(told).forEach(function (key) { marks[key] = told[key]; });
      } catch (e) { /* a malformed answer marks nothing */ }
      holder.dataset.done = "{}";
    }
    var seq = resultSeq(), blocks = [];
    Object.keys(marks).forEach(function (key) {
      var mark = marks[key], waits = false;
      if (!mark || mark.seq <= seq) { delete marks[key]; return; }  // the result was read after it
      document.querySelectorAll("#result [data-key]").forEach(function (item) {
        if (item.dataset.key !== key || item.classList.contains("done") || item.tagName === "FORM") return;
        var forms = Array.prototype.filter.call(
          item.querySelectorAll(":scope > td.row-actions form.row-action, :scope > .card-actions form.row-action"),
          function (f) { return mark.tools.indexOf(f.dataset.tool) >= 0; });
        if (!forms.length) return;
        if (forms.some(function (f) { return f.classList.contains("htmx-request"); })) { waits = true; return; }
        forms.forEach(function (f) { f.remove(); });
        if (!item.querySelector(":scope > td.row-actions form.row-action, :scope > .card-actions form.row-action")) {
          var pick = item.querySelector(":scope > td.row-actions input.pick");
          if (pick) pick.remove();
        }
        var said = item.querySelector(":scope > td.row-actions .row-status, :scope > .card-actions .row-status");
        if (said && said.querySelector(".outcome")) {  // this tab's own answer stays (a batch reads it), the mark beside it
          var beside = document.createElement("span");
          beside.className = "elsewhere";
          beside.textContent = " · " + mark.done + " in another tab";
          said.appendChild(beside);
        } else if (said) {
          said.textContent = mark.done;
          said.title = "Done in another tab or window";
        }
        item.classList.remove("urgent");
        item.classList.add("done");
        var block = item.closest(".table-block");
        if (block && blocks.indexOf(block) < 0) blocks.push(block);
      });
      if (!waits) delete marks[key];
    });
    blocks.forEach(function (block) { if (window.storebenchBatchUpdate) window.storebenchBatchUpdate(block); });
  }
  document.addEventListener("htmx:oobAfterSwap", function (evt) {
    var target = evt.detail && evt.detail.target;
    if (target && target.id === "done-elsewhere") apply();
  });
  document.addEventListener("htmx:afterRequest", function () {
    if (Object.keys(marks).length) setTimeout(apply, 0);  // after the row's own answer has marked it
  });
})();

// The returns inbox: each row's hours left before its return escalates, counted from the
// store's time in the header's data (the inbox is a cached read; the store moves on), and
// the open rows within one window marked urgent, by the rule and class the list_returns
// table uses (console.present: hours left <= URGENT_HOURS, given as the inbox's
// data-urgent-hours; an open return).
(function () {
  function parse(text) {
    var m = /(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d)/.exec(text || "");
    return m ? Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5]) : null;
  }
  function storeNow(inbox) {
    var header = document.getElementById("store-header");
    var now = header ? parse(header.dataset.time) : null;
    if (now !== null) return now;
    var read = inbox.querySelector("p.cached b");  // no header yet: the time of the read
    return read ? parse(read.textContent) : null;
  }
  function mark() {
    var inbox = document.getElementById("inbox");
    if (!inbox) return;
    var now = storeNow(inbox), urgent = parseFloat(inbox.dataset.urgentHours);
    if (now === null || isNaN(urgent)) return;
    inbox.querySelectorAll("td.when[data-escalates]").forEach(function (cell) {
      var at = parse(cell.dataset.escalates), row = cell.closest("tr");
      if (at === null || !row) return;
      var hours = (at - now) / 3600000;
      var last = row.cells[row.cells.length - 1];
      var open = !!row.querySelector("form.refund-form") || /^\s*open\b/.test(last.textContent);
      row.classList.toggle("urgent", open && hours <= urgent);
      row.classList.toggle("done", !open || !!last.querySelector(".tag.free"));
      var left = cell.querySelector(".hours-left");
      if (!left) {
        left = document.createElement("span");
        left.className = "hours-left";
        cell.appendChild(left);
      }
      left.textContent = !open ? "" : hours > 0 ? hours.toFixed(1) + " h left" : "escalation due";  // a resolved return has no deadline
    });
  }
  document.addEventListener("DOMContentLoaded", mark);
  document.addEventListener("htmx:afterSettle", mark);
  document.addEventListener("htmx:oobAfterSwap", mark);
  window.storebenchMarkInbox = mark;
})();

// Result tables: sort by a column (the cells' data-sort keys), filter rows by text,
// click an id to copy it.
(function () {
  document.addEventListener("click", function (evt) {
    var sort = evt.target.closest("button.sort");
    if (sort) {
      var th = sort.closest("th"), table = sort.closest("table");
      var col = Array.prototype.indexOf.call(th.parentNode.children, th);
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("thead th").forEach(function (h) { h.setAttribute("aria-sort", "none"); });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[col].dataset.sort || "", y = b.cells[col].dataset.sort || "";
        return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
      });
      rows.forEach(function (r) { body.appendChild(r); });
      return;
    }
    var copy = evt.target.closest("button.copy");
    if (copy && navigator.clipboard) {
      navigator.clipboard.writeText(copy.dataset.copy).then(function () {
        copy.classList.add("copied");
        setTimeout(function () { copy.classList.remove("copied"); }, 1200);
      }, function () {});
    }
  });
  document.addEventListener("input", function (evt) {
    if (!evt.target.classList.contains("table-filter")) return;
    var needle = evt.target.value.toLowerCase();
    var table = evt.target.closest(".table-block").querySelector("table");
    Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
      r.hidden = needle !== "" && r.textContent.toLowerCase().indexOf(needle) < 0;
    });
  });
})();

// A double click lands its second press on whatever the first press's answer put under the
// pointer: the next page's Next button, a row's Ship in a list just read, an inbox row
// offering the rest of a refund the customer did not accept. So a control that arrived
// in answer to a press takes no press until DOUBLE_MS after that press, and never in its
// first SETTLE_MS on the page (no one aims at a button that quickly): a click there falls
// through its buttons (console.css, form.arriving). Keys are left alone: a key acts on the
// focus, which an answer does not move onto a new button. A tool form the answer brought
// back with its call's id (data-held) is left alone too: a second press there is the same
// call, and the server answers it as such.
(function () {
  var DOUBLE_MS = 600, SETTLE_MS = 300, ANSWER_MS = 3000, pressed = 0;
  function callForms(root) {
    return storebenchForms(root).filter(function (f) {
      return f.querySelector("input[name=call_id]") && !f.hasAttribute("data-held");
    });
  }
  document.addEventListener("htmx:beforeRequest", function (evt) {
    var form = evt.detail.elt;
    if (form && form.tagName === "FORM" && form.querySelector("input[name=call_id]")) pressed = Date.now();
  });
  // Marked as they enter the page (htmx:load comes only after the swap has settled, time
  // enough for a quick second click to land). A form already on the page and only moved (a
  // table sorted by a column) is not new: the pointer did not bring it.
  var known = new WeakSet();
  function know(root) { storebenchForms(root).forEach(function (f) { known.add(f); }); }
  know(document);
  document.addEventListener("DOMContentLoaded", function () { know(document); });
  new MutationObserver(function (records) {
    var now = Date.now(), added = [];
    records.forEach(function (r) { Array.prototype.push.apply(added, r.addedNodes); });
    var fresh = [];
    added.forEach(function (node) { fresh = fresh.concat(callForms(node).filter(function (f) { return !known.has(f); })); });
    added.forEach(know);
    if (now - pressed > ANSWER_MS) return;  // long after the last press: not in answer to it
    var forms = fresh;
    if (!forms.length) return;
    forms.forEach(function (f) { f.classList.add("arriving"); });
    setTimeout(function () { forms.forEach(function (f) { f.classList.remove("arriving"); }); },
               Math.max(pressed + DOUBLE_MS - now, SETTLE_MS));
  }).observe(document.documentElement, { childList: true, subtree: true });
})();

// Row actions: each is one call through the call endpoint with its own call id. The
// reply's outcome line lands in the row; the list stays. After any answer from the
// server every form that makes a call (row actions, quick reads, the inbox's refunds, the
// purchase-order grid, the tool forms; a call's reply brings its tool form back with the
// id it was sent with) keeps that id for REPEAT_MS, then gets a fresh one, at once if
// anything in it is changed or another call is sent: a second press that soon after the
// answer, with nothing between (a double click, Enter pressed twice), is the same call,
// answered from the call record with nothing spent, while a retry, a corrected amount or a
// read made again after other calls is a new call. Until the answer its button is
// disabled; a submit made meanwhile is dropped, not queued (htmx would send a queued one
// after the answer).
// With no answer (or a 5xx) it keeps its id, and the page asks the server's call record
// whether that call was stored.
(function () {
  function dropWhileSending(root) {
    storebenchForms(root).forEach(function (form) {
      if (form.querySelector("input[name=call_id]") && !form.hasAttribute("hx-sync")) {
        form.setAttribute("hx-sync", "this:drop");
      }
    });
  }
  document.addEventListener("htmx:load", function (evt) { dropWhileSending(evt.detail.elt); });
  dropWhileSending(document);
  function freshId() {
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return (b < 16 ? "0" : "") + b.toString(16); }).join("");
  }
  function shiftId() {
    var top = document.getElementById("shift-top");
    return top ? top.dataset.shift : null;
  }
  var REPEAT_MS = 1500;
  var held = [];  // the renewals of the ids kept after their answer, each run once
  window.storebenchNewCall = function (form) {  // the next press of ``form`` is a new call, now
    var input = form.querySelector("input[name=call_id]");
    held.forEach(function (h) { if (h.input === input) h.renew(); });
  };
  function renewSoon(input) {
    var form = input.form, sent = input.value, timer = null, done = false;
    function renew() {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (form) { form.removeEventListener("input", renew); form.removeEventListener("change", renew); }
      // Sent again meanwhile and not answered yet: the id stays (the call-record check after no
      // answer reads it); the answer holds it anew.
      if (form && form.classList.contains("htmx-request")) return;
      if (input.value === sent) input.value = freshId();
    }
    if (form && form.dataset.edited === "1") {  // changed while its call was on its way
      delete form.dataset.edited;
      input.value = freshId();
      return;
    }
    if (form) { form.addEventListener("input", renew); form.addEventListener("change", renew); }
    timer = setTimeout(renew, REPEAT_MS);
    held.push({ id: sent, input: input, renew: renew });
  }
  function edited(evt) {
    var form = evt.target && evt.target.form;
    if (form && form.classList.contains("htmx-request")) form.dataset.edited = "1";
  }
  document.addEventListener("input", edited);
  document.addEventListener("change", edited);
  document.addEventListener("htmx:load", function (evt) {  // a tool form a reply brought back with its call's id
    storebenchForms(evt.detail.elt, "form[data-held]").forEach(function (form) {
      form.removeAttribute("data-held");
      var input = form.querySelector("input[name=call_id]");
      if (input) renewSoon(input);
    });
  });
  document.addEventListener("htmx:beforeRequest", function (evt) {  // another call: every other kept id goes
    var form = evt.detail.elt, input = form && form.querySelector && form.querySelector("input[name=call_id]");
    if (!input) return;
    delete form.dataset.edited;
    var keep = [];
    held.forEach(function (h) { if (h.id === input.value) keep.push(h); else h.renew(); });
    held = keep;
  });
  document.addEventListener("htmx:afterRequest", function (evt) {
    var form = evt.detail.elt;
    if (!form || form.tagName !== "FORM") return;
    var id = form.querySelector("input[name=call_id]");
    var xhr = evt.detail.xhr;
    if (!id || !xhr || !xhr.status || xhr.status >= 500) return;  // no answer: the same call when sent again
    if (form.classList.contains("row-action")) {
      var outcome = form.parentNode.querySelector(".row-status .outcome");
      var row = form.closest("tr") || form.closest(".card");
      if (outcome && outcome.dataset.ok === "1" && outcome.dataset.open !== "1" && row) {  // a refund not accepted leaves it open
        // Its button goes (and was disabled while the call ran, which let the focus fall to the
        // page): the focus stays on the row, unless the person moved it elsewhere meanwhile.
        var at = document.activeElement;
        if (!at || at === document.body || row.contains(at)) row.focus();
        row.classList.remove("urgent");
        row.classList.add("done");
        row.querySelectorAll("form.row-action, input.pick").forEach(function (f) { f.remove(); });
        return;
      }
    }
    renewSoon(id);  // a form that stays (a quick read, a refused row action, the inbox); a tool form the
    // reply replaced comes back marked data-held (above)
  });
  function unanswered(evt) {
    var form = evt.detail.elt;
    if (!form || form.tagName !== "FORM" || !form.querySelector("input[name=call_id]")) return;
    var callId = form.querySelector("input[name=call_id]").value;
    var box = form.classList.contains("row-action") ? form.parentNode.querySelector(".row-status") : document.getElementById("result");
    if (!box) return;
    box.innerHTML = "";
    var note = document.createElement("p");
    note.className = "problem outcome";
    note.setAttribute("role", "alert");
    note.dataset.ok = "0";
    note.textContent = "No answer from the server. Checking the call record for call " + callId + "…";
    box.appendChild(note);
    var tries = 0;
    function ask() {
      tries += 1;
      fetch("/shifts/" + shiftId() + "/call-status/" + callId + "/", { credentials: "same-origin", cache: "no-store" })
        .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
        .then(function (rec) {
          if (rec.stored) {
            note.textContent = "The call reached the server and is stored as #" + rec.seq + " (" + rec.tool + "): " +
              (rec.reached_store ? (rec.spent_operation ? "it spent its operation" : "it was free") : "refused before the store, nothing spent") +
              (rec.is_error ? ", and it was refused." : ".") + " Reload to see its result.";
          } else {
            note.textContent = "The call record has no call " + callId + ": it did not reach the store and no operation was spent. Submit again (the same call id is kept, so it cannot be spent twice).";
          }
        })
        .catch(function () {
          note.textContent = "No answer from the server for call " + callId + ", and its call record cannot be read yet (server unreachable): retrying in 5 s. Submitting again is safe: the same call id is kept, so it is never spent twice.";
          if (tries < 60) setTimeout(ask, 5000);
        });
    }
    ask();
  }
  // A 4xx is not swapped by htmx: without this the page would show nothing at all. The
  // request was refused before the view (a stale security token after signing in again, 403)
  // or by it before any call (400, 404): nothing reached the store.
  function refused(evt, xhr) {
    var form = evt.detail.elt;
    if (!form || form.tagName !== "FORM" || !form.querySelector("input[name=call_id]")) return;
    var box = form.classList.contains("row-action") ? form.parentNode.querySelector(".row-status") : document.getElementById("result");
    if (!box) return;
    var said = (xhr.responseText || "").trim();
    var note = document.createElement("p");
    note.className = "problem outcome";
    note.setAttribute("role", "alert");
    note.dataset.ok = "0";
    note.textContent = xhr.status === 403
      ? "Refused before the store, nothing spent: this page's security token is out of date (you signed in again, perhaps in another tab). Reload the page, then send the call again."
      : "Refused before the store (" + xhr.status + "), nothing spent" +
        (said && said.length < 300 && said.indexOf("<") < 0 ? ": " + said : ".") + " Reload the page if this persists.";
    box.innerHTML = "";
    box.appendChild(note);
  }
  document.addEventListener("htmx:sendError", unanswered);
  document.addEventListener("htmx:timeout", unanswered);
  document.addEventListener("htmx:responseError", function (evt) {
    var xhr = evt.detail.xhr;
    if (!xhr) return;
    if (xhr.status >= 500) unanswered(evt); else refused(evt, xhr);
  });
})();

// Keyboard: in a result table, j / k move between rows; a row action's letter
// (s ship, r refund, o reorder) submits it for the focused row, and p (reprice) goes to
// the row's price box, since the new price is to be typed first (Enter sends it); x ticks
// the focused row for a batch.  The keys can be switched off (a screen reader's own single
// letters then reach it); the choice is kept in this browser.
(function () {
  var KEPT = "storebench-keys";
  function keysOn() {
    var box = document.getElementById("keys-on");
    return !box || box.checked;
  }
  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("keys-on");
    if (!box) return;
    try { box.checked = window.localStorage.getItem(KEPT) !== "off"; } catch (e) { /* storage blocked: on */ }
    box.addEventListener("change", function () {
      try { window.localStorage.setItem(KEPT, box.checked ? "on" : "off"); } catch (e) { /* kept for this page only */ }
    });
  });
  document.addEventListener("keydown", function (evt) {
    if (evt.ctrlKey || evt.metaKey || evt.altKey || !keysOn()) return;
    var tag = (evt.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select") return;
    var row = evt.target.closest ? evt.target.closest("table.result-table tbody tr") : null;
    if (evt.key === "j" || evt.key === "k") {
      var rows = Array.prototype.filter.call(document.querySelectorAll("#result table.result-table tbody tr"), function (r) { return !r.hidden; });
      if (!rows.length) return;
      var at = row ? rows.indexOf(row) : -1;
      var next = rows[Math.max(0, Math.min(rows.length - 1, at + (evt.key === "j" ? 1 : -1)))];
      next.focus();
      evt.preventDefault();
      return;
    }
    if (!row) return;
    if (evt.key === "x") {  // tick or untick the row for a batch
      var box = row.querySelector("input.pick");
      if (box) {
        evt.preventDefault();
        box.checked = !box.checked;
        box.dispatchEvent(new Event("change", { bubbles: true }));
      }
      return;
    }
    var form = row.querySelector('form.row-action[data-key="' + evt.key + '"]');
    if (form) {
      evt.preventDefault();
      if (form.classList.contains("htmx-request")) return;  // its call is on its way
      var price = form.dataset.tool === "set_price" && form.querySelector("input[name=arg_price]");
      if (price) {  // a reprice needs the new price first: the key goes to its box (Enter sends it)
        price.focus();
        price.select();
        return;
      }
      if (form.requestSubmit) form.requestSubmit(); else form.querySelector("button").click();
    }
  });
})();

// After a call's result lands in #result: its heading and outcome are said through the page's
// own live region (one that arrives together with its text is often not read out), and the
// focus goes where the work goes on, since the control that sent the call may have been
// replaced: to the field the refusal names, marked invalid and pointed at the reason, or
// to the result itself.
(function () {
  function unmark() {  // a field marked by an earlier refusal
    document.querySelectorAll("[data-refused]").forEach(function (field) {
      var rest = (field.getAttribute("aria-describedby") || "").split(" ").filter(function (id) {
        return id && id !== field.dataset.refused;
      });
      if (rest.length) field.setAttribute("aria-describedby", rest.join(" ")); else field.removeAttribute("aria-describedby");
      field.removeAttribute("aria-invalid");
      delete field.dataset.refused;
    });
  }
  function refusedField(result, sender) {
    // Only in the form that sent the call (not on a re-read of a stored call), and only
    // where the person can reach it (not in a folded tool group).
    var problem = result.querySelector(".problem[data-field]");
    if (!problem || !sender || sender.tagName !== "FORM") return null;
    var form = sender.id ? document.getElementById(sender.id) : null;  // a tool form is swapped for a fresh copy
    form = form || (document.contains(sender) ? sender : null);
    var field = form ? form.querySelector('[name="arg_' + CSS.escape(problem.dataset.field) + '"]') : null;
    return field && !field.closest("details:not([open])") ? field : null;
  }
  document.addEventListener("htmx:afterSettle", function (evt) {
    var result = evt.detail.target;
    if (result && result.classList && result.classList.contains("row-status")) {
      var told = document.getElementById("said");  // a row action's outcome (and a new window) is read out too
      if (told) told.textContent = result.textContent.replace(/\s+/g, " ").trim();
      return;
    }
    if (!result || result.id !== "result") return;
    unmark();
    var said = document.getElementById("said");
    if (said) {  // "#12 list_orders 1 operation" and, for a write or a refusal, what it did
      said.textContent = Array.prototype.map.call(result.querySelectorAll(".result > h3, .result > .window-marker, .result > .outcome"), function (el) {
        return el.textContent.replace(/\s+/g, " ").trim();
      }).filter(Boolean).join(". ");
    }
    var config = evt.detail.requestConfig || {};
    var field = config.verb === "post" ? refusedField(result, config.elt) : null;
    if (field) {
      var problem = result.querySelector(".problem[data-field]");
      problem.id = "problem-" + result.querySelector(".result").dataset.seq;
      field.dataset.refused = problem.id;
      field.setAttribute("aria-invalid", "true");
      field.setAttribute("aria-describedby", [field.getAttribute("aria-describedby"), problem.id].filter(Boolean).join(" "));
      field.focus();
      if (document.activeElement === field) return;
    }
    result.focus({ preventScroll: true });
    // A result that starts below the fold (the brief open, a long form) is brought into view.
    var top = result.getBoundingClientRect().top;
    if (top < 0 || top > window.innerHeight - 120) result.scrollIntoView({ block: "start" });
  });
})();

// The purchase-order line editor: one box per SKU, sent as the tool's ``lines`` object.
(function () {
  function lines(form) {
    var out = {}, total = 0;
    form.querySelectorAll("input.po-line").forEach(function (box) {
      var n = parseInt(box.value, 10);
      if (n > 0) { out[box.dataset.sku] = n; total += n; }
    });
    return { lines: out, total: total };
  }
  // What was typed is kept per supply product for the tab's life, so a refused order (or
  // another read in between) loses nothing: the editor shown again for it is filled back in.
  function key(form) {  // the form's call URL names the shift
    var sp = form.querySelector("input[name=arg_supply_product_id]");
    return sp ? "po-lines:" + form.getAttribute("action") + ":" + sp.value : null;
  }
  function keep(form) {
    var k = key(form), typed = {};
    if (!k) return;
    form.querySelectorAll("input.po-line").forEach(function (box) { if (box.value) typed[box.dataset.sku] = box.value; });
    try { window.sessionStorage.setItem(k, JSON.stringify(typed)); } catch (e) { /* storage refused: nothing kept */ }
  }
  function restore(root) {
    (root.querySelectorAll ? root : document).querySelectorAll("form.po-lines").forEach(function (form) {
      var k = key(form), typed = null;
      try { typed = k ? JSON.parse(window.sessionStorage.getItem(k) || "null") : null; } catch (e) { typed = null; }
      if (!typed) return;
      form.querySelectorAll("input.po-line").forEach(function (box) {
        if (!box.value && typed[box.dataset.sku]) box.value = typed[box.dataset.sku];
      });
      form.querySelector(".po-total").textContent = lines(form).total;
    });
  }
  document.addEventListener("input", function (evt) {
    var form = evt.target.closest && evt.target.closest("form.po-lines");
    if (!form) return;
    form.querySelector(".po-total").textContent = lines(form).total;
    keep(form);
  });
  // Under the vendor's minimum the store refuses the order and spends an operation: say so
  // here instead, before anything is sent (a capturing listener runs before htmx's own).
  document.addEventListener("submit", function (evt) {
    var form = evt.target;
    if (!form.classList || !form.classList.contains("po-lines")) return;
    var moq = parseInt(form.dataset.moq, 10), total = lines(form).total, short = form.querySelector(".po-short");
    if (moq > 0 && total < moq) {
      evt.preventDefault();
      evt.stopPropagation();
      if (short) {
        short.textContent = "This order has " + total + " unit" + (total === 1 ? "" : "s") + "; the vendor's minimum is " +
          moq + " an order, so the store would refuse it and spend an operation. Add units, then place it.";
        short.hidden = false;
      }
      return;
    }
    if (short) short.hidden = true;
  }, true);
  document.addEventListener("htmx:configRequest", function (evt) {
    var form = evt.detail.elt;
    if (!form || !form.classList || !form.classList.contains("po-lines")) return;
    evt.detail.parameters["arg_lines"] = JSON.stringify(lines(form).lines);
  });
  document.addEventListener("htmx:afterRequest", function (evt) {
    var form = evt.detail.elt, xhr = evt.detail.xhr;
    if (!form || !form.classList || !form.classList.contains("po-lines") || !xhr) return;
    if (/class="outcome" data-ok="1"/.test(xhr.responseText || "")) {  // placed: nothing to keep
      try { window.sessionStorage.removeItem(key(form)); } catch (e) { /* nothing kept */ }
    }
  });
  document.addEventListener("htmx:load", function (evt) { restore(evt.detail.elt); });
  document.addEventListener("DOMContentLoaded", function () { restore(document); });
})();

// Batches of row actions: tick rows, see how many operations they will spend, send. Each
// row's action is still its own form (one metered call, its own call id), submitted one
// after another, each after the previous one's answer; the first refusal or unanswered
// call stops the batch and says which row and whether that call reached the store.
(function () {
  function blockOf(el) { return el.closest(".table-block"); }
  function picked(block) {
    return Array.prototype.filter.call(block.querySelectorAll("input.pick:checked"), function (box) {
      return box.closest("tr").querySelector("form.row-action");
    });
  }
  function opsLeft() {
    var header = document.getElementById("store-header");
    return header ? parseInt(header.dataset.opsLeft, 10) : NaN;
  }
  function sentence(text) {  // the store's reason ends without a full stop; the batch's line goes on after it
    text = text.trim();
    return /[.!?]$/.test(text) ? text : text + ".";
  }
  function update(block) {
    var bar = block.querySelector("[data-batch]");
    if (!bar) return;
    var n = picked(block).length, left = opsLeft();
    var words = n === 0 ? "Tick rows to queue their actions: each is one operation, sent one after another."
      : n + " row" + (n === 1 ? "" : "s") + " ticked: " + n + " operation" + (n === 1 ? "" : "s") +
        " will be spent, one metered call per row, sent one after another.";
    if (n > 0 && left >= 0 && n > left) {
      words += " Only " + left + " operation" + (left === 1 ? " is" : "s are") + " left in this window: the rest are spent in the next window, on lists read in this one.";
    }
    bar.querySelector(".batch-count").textContent = words;
    var send = bar.querySelector(".batch-send");
    send.disabled = n === 0 || bar.dataset.running === "1";
    send.textContent = "Send " + n + " operation" + (n === 1 ? "" : "s");
    bar.dataset.count = String(n);
  }
  function sendOne(form, row) {
    return new Promise(function (resolve) {
      var started = false;
      function began(evt) { if (evt.detail.elt === form) started = true; }
      function done(evt) {
        if (evt.detail.elt !== form) return;
        document.removeEventListener("htmx:afterRequest", done);
        var xhr = evt.detail.xhr;
        var answered = !!(xhr && xhr.status && xhr.status < 500);
        setTimeout(function () {  // after the row's own handler has marked it
          var outcome = row.querySelector(".row-status .outcome");
          resolve({ answered: answered, ok: answered && !!outcome && outcome.dataset.ok === "1",
                    open: !!outcome && outcome.dataset.open === "1", text: outcome ? outcome.textContent.trim() : "" });
        }, 0);
      }
      document.addEventListener("htmx:beforeRequest", began);
      document.addEventListener("htmx:afterRequest", done);
      if (form.requestSubmit) form.requestSubmit(); else form.querySelector("button").click();
      setTimeout(function () {  // a declined confirm (the last operation, a late reorder) sends nothing
        document.removeEventListener("htmx:beforeRequest", began);
        if (started) return;
        document.removeEventListener("htmx:afterRequest", done);
        resolve({ declined: true, answered: false, ok: false, text: "" });
      }, 0);
    });
  }
  function run(block) {
    var bar = block.querySelector("[data-batch]");
    var status = bar.querySelector(".batch-status");
    var rows = picked(block).map(function (box) { return box.closest("tr"); });
    var total = rows.length, sent = 0, elsewhere = 0, open = 0;
    bar.dataset.running = "1";
    status.classList.remove("problem");
    update(block);
    function next() {
      if (window.storebenchWhenPanelsQuiet) window.storebenchWhenPanelsQuiet(step); else step();
    }
    function step() {
      if (sent === total) {
        bar.dataset.running = "";
        var spent = total - elsewhere;
        status.textContent = "Sent " + spent + " operation" + (spent === 1 ? "" : "s") + ": " +
          (open ? open + " refund" + (open === 1 ? " was" : "s were") + " not accepted as settlement (" +
            (open === 1 ? "its row stays" : "their rows stay") + " open), every other row done." : "every row done.") +
          (elsewhere ? " " + elsewhere + " row" + (elsewhere === 1 ? " was" : "s were") +
            " done in another tab meanwhile and not sent." : "");
        update(block);
        return;
      }
      var row = rows[sent], form = row.querySelector("form.row-action"), box = row.querySelector("input.pick");
      if (!form) {  // done in another tab meanwhile (its actions are gone): nothing to send for it
        sent += 1;
        elsewhere += 1;
        if (box) box.checked = false;
        next();
        return;
      }
      status.textContent = "Sending " + (sent + 1) + " of " + total + " (" + row.dataset.key + ")…";
      sendOne(form, row).then(function (result) {
        if (result.declined) {
          bar.dataset.running = "";
          status.classList.add("problem");
          var said = row.querySelector(".row-status .unchanged");  // the page held it back (see the row)
          status.textContent = "Batch stopped at row " + row.dataset.key + ": " +
            (said ? "its price is unchanged" : "its warning was declined") + ", so its call was not sent and nothing was spent. " +
            (total - sent) + " row" + (total - sent === 1 ? " was not sent; it stays" : "s were not sent; they stay") + " ticked.";
          update(block);
          return;
        }
        sent += 1;
        if (box) box.checked = false;
        if (result.open) open += 1;
        if (result.ok) { next(); return; }
        bar.dataset.running = "";
        status.classList.add("problem");
        var where = result.answered
          ? sentence(result.text || "refused") + (/before the store/.test(result.text) ? " This call did not reach the store." : " This call reached the store.")
          : "No answer from the server: the row shows, from the call record, whether this call reached the store.";
        status.textContent = "Batch stopped at row " + row.dataset.key + " (" + sent + " of " + total + "): " + where +
          " " + (total - sent) + " row" + (total - sent === 1 ? " was" : "s were") + " not sent.";
        update(block);
      });
    }
    next();
  }
  window.storebenchBatchUpdate = update;
  document.addEventListener("change", function (evt) {
    var t = evt.target;
    if (!t.classList) return;
    if (t.classList.contains("pick-all")) {
      var block = blockOf(t);
      block.querySelectorAll("tbody tr").forEach(function (row) {
        var box = row.querySelector("input.pick");
        if (box && !row.hidden) box.checked = t.checked;
      });
      update(block);
    } else if (t.classList.contains("pick")) {
      update(blockOf(t));
    }
  });
  document.addEventListener("click", function (evt) {
    var send = evt.target.closest && evt.target.closest("button.batch-send");
    if (send && !send.disabled) run(blockOf(send));
  });
})();

// A text longer than its field takes (data-max-length) is held back with its length named,
// as a number out of range is: the browser's own maxlength would cut a pasted text short
// without a word and send what the person never saw. The text stays as typed.
(function () {
  function check(el) {
    var max = parseInt(el.dataset.maxLength, 10), n = el.value.length;
    el.setCustomValidity(n > max ? "At most " + max.toLocaleString("en-US") + " characters: this has " +
                                   n.toLocaleString("en-US") + "." : "");
  }
  document.addEventListener("input", function (evt) {
    if (evt.target.dataset && evt.target.dataset.maxLength) check(evt.target);
  });
  // A text put in the form by the server (a refused call's form keeps what was typed) has
  // had no input event: checked here, before htmx sends, it is held back and named at once.
  document.addEventListener("submit", function (evt) {
    var form = evt.target;
    if (!form.querySelectorAll) return;
    var fields = form.querySelectorAll("[data-max-length]");
    if (!fields.length) return;
    fields.forEach(check);
    if (!form.checkValidity()) {
      evt.preventDefault();
      evt.stopImmediatePropagation();
      form.reportValidity();
    }
  }, true);
})();

// Ending the shift early: the question says how many windows are left unplayed, read off the
// store header as it stands (the page's own text cannot know), before htmx asks it.
(function () {
  document.addEventListener("submit", function (evt) {
    var form = evt.target;
    if (!form.classList || !form.classList.contains("end-shift")) return;
    var header = document.getElementById("store-header");
    var at = header ? parseInt(header.dataset.window, 10) : NaN, of = header ? parseInt(header.dataset.windows, 10) : NaN;
    var question = "End the whole shift now? The store is frozen and settled as played; this cannot be undone.";
    if (at > 0 && of >= at) {
      var left = of - at;
      question = "End the whole shift now, in window " + at + " of " + of + "?" +
        (left ? " The " + left + " window" + (left === 1 ? "" : "s") + " after this one " + (left === 1 ? "is" : "are") +
          " not played, and continuity counts " + (left === 1 ? "it" : "them") + " as missed." : "") +
        " Every order still unshipped that falls due before the shift's last day ends is cancelled, fined and " +
        "counts as late, even one not due yet, and every open return that would escalate by then escalates." +
        " The store is frozen and settled as played; this cannot be undone.";
    }
    form.setAttribute("hx-confirm", question);
  }, true);
})();

// The tool groups a person opened or closed stay so on the next page load (the server opens
// the first two): kept in this browser's storage, the same for every shift.
(function () {
  var key = "storebench-tool-groups";
  function kept() {
    try { return JSON.parse(window.localStorage.getItem(key) || "{}") || {}; } catch (e) { return {}; }
  }
  document.addEventListener("DOMContentLoaded", function () {
    var open = kept();
    document.querySelectorAll("#tools details.family[id]").forEach(function (group) {
      if (Object.prototype.hasOwnProperty.call(open, group.id)) group.open = !!open[group.id];
      group.addEventListener("toggle", function () {
        var now = kept();
        now[group.id] = group.open;
        try { window.localStorage.setItem(key, JSON.stringify(now)); } catch (e) { /* no storage: as before */ }
      });
    });
  });
})();

// A reprice to the price the row already shows changes nothing and would spend an operation:
// said in the row instead, before anything is sent (a capturing listener runs before htmx's own).
(function () {
  function cents(text) {
    var n = Number(String(text).trim().replace(/^\$/, ""));
    return isFinite(n) && String(text).trim() !== "" ? Math.round(n * 100) : NaN;
  }
  document.addEventListener("submit", function (evt) {
    var form = evt.target;
    if (!form.classList || !form.classList.contains("row-action") || form.dataset.tool !== "set_price") return;
    var box = form.querySelector("input[name=arg_price]");
    if (!box || isNaN(cents(box.value)) || cents(box.value) !== cents(box.defaultValue)) return;
    evt.preventDefault();
    evt.stopPropagation();
    var status = form.parentNode.querySelector(".row-status");
    if (status) {
      status.innerHTML = "";
      var note = document.createElement("p");
      note.className = "problem unchanged";
      note.setAttribute("role", "alert");
      note.textContent = "The price is already " + box.defaultValue + ": type the new price, then Reprice (nothing was sent).";
      status.appendChild(note);
    }
    box.focus();
    box.select();
  }, true);
})();
