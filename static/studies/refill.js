// A refused form comes back filled in as it was sent (studies/refill.py keeps what it posted).
// The form is the one posted to the same address (its own, or a button's formaction); of several
// (a quota per cell, a revoke per invitation), the one whose hidden fields hold the values sent.
// Selects are set in the order of the form, each announcing its change, so that a list built
// from an earlier choice (the monitor's "To", from the shift chosen) is built before it is set.
(function () {
  "use strict";
  const source = document.getElementById("refill");
  if (!source) return;
  const refill = JSON.parse(source.textContent);
  const data = refill.data || {};
  function sent(name) { return Object.prototype.hasOwnProperty.call(data, name) ? data[name] : null; }
  function pathOf(address) { return new URL(address || "", window.location.href).pathname; }
  function postsTo(form) {  // the form's own address, and those of its buttons that post elsewhere (formaction)
    return [form.getAttribute("action")].concat(Array.from(form.querySelectorAll("[formaction]")).map(
      function (button) { return button.getAttribute("formaction"); })).map(pathOf);
  }
  function hiddenMatch(form) {
    return Array.from(form.querySelectorAll("input[type=hidden]")).every(function (field) {
      const values = sent(field.name);
      return field.name === "csrfmiddlewaretoken" || values === null || values.indexOf(field.value) >= 0;
    });
  }
  const form = Array.from(document.querySelectorAll("form")).find(function (candidate) {
    return (candidate.method || "").toLowerCase() === "post" && postsTo(candidate).indexOf(refill.action) >= 0
      && hiddenMatch(candidate);
  });
  if (!form) return;
  Array.from(form.elements).forEach(function (field) {
    if (!field.name || field.type === "hidden" || field.type === "submit" || field.type === "button") return;
    const values = sent(field.name);
    if (field.type === "checkbox" || field.type === "radio") {
      field.checked = values !== null && values.indexOf(field.value) >= 0;  // an unticked box is not sent
    } else if (values === null) {
      return;
    } else if (field.tagName === "SELECT") {
      Array.from(field.options).forEach(function (option) { option.selected = values.indexOf(option.value) >= 0; });
      field.dispatchEvent(new Event("change", {bubbles: true}));
    } else {
      field.value = values[0];
    }
  });
  form.classList.add("refilled");
  form.scrollIntoView({block: "center"});
})();
