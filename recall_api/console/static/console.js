// htmx swaps error answers too (a 403 or 422 fragment says what went wrong), and the
// message region is announced; nothing else runs on every page.
document.addEventListener("DOMContentLoaded", function () {
  if (!window.htmx) return;
  htmx.config.responseHandling = [
    { code: "204", swap: false },
    { code: "[23]..", swap: true },
    { code: "[45]..", swap: true, error: false },
  ];
  document.body.addEventListener("htmx:responseError", function (e) {
    var flash = document.getElementById("flash");
    if (flash && e.detail.xhr) flash.textContent = e.detail.xhr.status + ": " + e.detail.xhr.statusText;
  });
});
