// Live monitor: take the rows' HTML from the websocket; while it is open, htmx polling pauses.
(function () {
  const mode = document.getElementById("monitor-mode");
  const rows = document.getElementById("monitor-rows");
  if (!mode || !rows || !window.WebSocket) return;
  const scheme = location.protocol === "https:" ? "wss://" : "ws://";
  function connect() {
    const socket = new WebSocket(scheme + location.host + mode.dataset.ws);
    socket.onopen = function () { window.studiesMonitorLive = true; mode.textContent = "live"; };
    socket.onmessage = function (event) {
      const data = JSON.parse(event.data);
      if (data.html !== undefined) { rows.innerHTML = data.html; if (window.htmx) htmx.process(rows); }
    };
    socket.onclose = function () {
      window.studiesMonitorLive = false; mode.textContent = "polling";
      setTimeout(connect, 10000);
    };
  }
  connect();
})();
