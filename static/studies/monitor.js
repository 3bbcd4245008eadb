// Live monitor: take the rows' HTML from the websocket; while it is open, htmx polling pauses.
// The action form's shift list is rebuilt from the rows after every update, so a shift
// assigned since the page loaded can be chosen and one that left the monitor cannot.
(function () {
  const mode = document.getElementById("monitor-mode");
  const rows = document.getElementById("monitor-rows");
  if (!mode || !rows) return;

  function syncChoices() {
    const select = document.getElementById("monitor-attempt");
    const note = document.getElementById("monitor-choice-note");
    if (!select) return;
    const chosen = select.value;
    const chosenText = chosen ? select.options[select.selectedIndex].textContent : "";
    const signature = Array.from(rows.querySelectorAll("tr[data-attempt]")).map(function (row) {
      return row.dataset.attempt + "|" + row.dataset.choice;
    }).join("\n");
    if (signature === select.dataset.signature) return;  // the same shifts: an open list stays open
    select.dataset.signature = signature;
    const options = [select.options[0]];  // "Choose a shift…"
    rows.querySelectorAll("tr[data-attempt]").forEach(function (row) {
      const option = document.createElement("option");
      option.value = row.dataset.attempt;
      option.textContent = row.dataset.choice;
      option.dataset.confirm = row.dataset.confirm;
      options.push(option);
    });
    select.replaceChildren.apply(select, options);
    const kept = options.some(function (option) { return option.value === chosen; });
    select.value = kept ? chosen : "";
    if (chosen && !kept && note) note.textContent = chosenText + " left the monitor (it ended): choose again.";
  }

  // The shifts that need attention, in one line above the table, written only when it
  // changes: a screen reader hears a shift turn overdue or high-risk without re-reading the
  // table, and nothing while the figures merely tick on.
  const RISKS = [["overdue", "overdue"], ["high", "at high risk"]];
  function summarise() {
    const line = document.getElementById("monitor-risk");
    if (!line) return;
    const parts = RISKS.map(function (risk) {
      const names = [];
      rows.querySelectorAll("tr[data-attempt]").forEach(function (row) {
        const cell = row.querySelector("td.risk");
        if (cell && cell.textContent.trim() === risk[0]) names.push(row.dataset.choice);
      });
      return names.length ? names.length + " " + risk[1] + " (" + names.join(", ") + ")" : "";
    }).filter(Boolean);
    const text = parts.length ? "Needs attention: " + parts.join("; ") + "." : "No shift is overdue or at high risk.";
    if (line.textContent !== text) line.textContent = text;
  }
  // "To" (reassign) offers whom some shown shift may go to, rebuilt from the rows (data-named:
  // the domain's rule, with labels) so that someone who joined since the page loaded is there;
  // once a shift is chosen, only whom its row names.
  function narrowTargets() {
    const shift = document.getElementById("monitor-attempt"), to = document.getElementById("monitor-to");
    if (!shift || !to) return;
    const named = {};
    rows.querySelectorAll("tr[data-attempt]").forEach(function (row) {
      try {
        JSON.parse(row.dataset.named || "[]").forEach(function (pair) { named[String(pair[0])] = pair[1]; });
      } catch (e) { /* a row without its list offers nobody */ }
    });
    const chosen = to.value, chosenText = chosen ? to.options[to.selectedIndex].textContent : "";
    const ids = Object.keys(named).sort(function (x, y) { return named[x].localeCompare(named[y]); });
    const signature = JSON.stringify(ids.map(function (id) { return [id, named[id]]; }));
    if (signature !== to.dataset.signature) {  // rebuilt only when whom the rows name changed (an open list stays)
      const options = [to.options[0]];  // "—"
      ids.forEach(function (id) {
        const option = document.createElement("option");
        option.value = id;
        option.textContent = named[id];
        options.push(option);
      });
      to.replaceChildren.apply(to, options);
      to.dataset.signature = signature;
    }
    const row = shift.value && rows.querySelector('tr[data-attempt="' + shift.value + '"]');
    const allowed = row ? (row.dataset.targets || "").split(" ") : null;
    Array.from(to.options).slice(1).forEach(function (option) {
      option.hidden = option.disabled = allowed !== null && allowed.indexOf(option.value) < 0;
    });
    const kept = Array.from(to.options).some(function (option) { return option.value === chosen && !option.disabled; });
    to.value = kept ? chosen : "";
    const note = document.getElementById("monitor-choice-note");
    if (chosen && !kept && note) note.textContent = chosenText + " can no longer take the chosen shift: choose again.";
  }
  const chooser = document.getElementById("monitor-attempt"), target = document.getElementById("monitor-to");
  function chosenAgain() {  // a new choice clears what the note said of the last one
    const note = document.getElementById("monitor-choice-note");
    if (note) note.textContent = "";
  }
  if (chooser) chooser.addEventListener("change", function () { chosenAgain(); narrowTargets(); });
  if (target) target.addEventListener("change", chosenAgain);
  function updated() { syncChoices(); summarise(); narrowTargets(); }

  summarise();
  rows.addEventListener("htmx:afterSwap", updated);
  if (!window.WebSocket) return;
  const scheme = location.protocol === "https:" ? "wss://" : "ws://";
  function connect() {
    const socket = new WebSocket(scheme + location.host + mode.dataset.ws);
    socket.onopen = function () { window.studiesMonitorLive = true; mode.textContent = "live"; };
    socket.onmessage = function (event) {
      const data = JSON.parse(event.data);
      if (data.html !== undefined) {
        rows.innerHTML = data.html;
        if (window.htmx) htmx.process(rows);
        updated();
      }
    };
    socket.onclose = function () {
      window.studiesMonitorLive = false; mode.textContent = "polling";
      setTimeout(connect, 10000);
    };
  }
  connect();
})();
