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
