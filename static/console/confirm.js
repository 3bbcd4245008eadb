// A plain form with data-confirm (starting a scored shift on the home page) asks before it is
// sent, as the workspace's htmx forms do with hx-confirm.
document.addEventListener("submit", function (evt) {
  var form = evt.target;
  if (form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) evt.preventDefault();
});
