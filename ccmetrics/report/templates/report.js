// ccmetrics report: sortable tables, filters and links into closed sections. Plain JavaScript, no library.
(function () {
  "use strict";

  // ------------------------------------------------------------ sorting
  // A cell sorts by its data-sort, else its data-value, else its text; numbers numerically, empty cells last.
  function key(row, column) {
    var cell = row.cells[column];
    if (!cell) { return ""; }
    if (cell.hasAttribute("data-sort")) { return cell.getAttribute("data-sort"); }
    if (cell.hasAttribute("data-value")) { return cell.getAttribute("data-value"); }
    return cell.textContent.trim();
  }

  function compare(a, b) {
    if (a === "" || b === "") { return (a === "") - (b === ""); }
    var x = Number(a), y = Number(b);
    if (!isNaN(x) && !isNaN(y)) { return x < y ? -1 : x > y ? 1 : 0; }
    return a.localeCompare(b, undefined, { numeric: true });
  }

  function sortTable(table, column, direction) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var sign = direction === "descending" ? -1 : 1;
    rows.sort(function (r, s) {
      var a = key(r, column), b = key(s, column);
      if (a === "" || b === "") { return compare(a, b); }  // empty last in both directions
      return sign * compare(a, b);
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      if (i === column) { th.setAttribute("aria-sort", direction); } else { th.removeAttribute("aria-sort"); }
    });
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
      if (th.hasAttribute("data-nosort")) { return; }
      th.title = th.title ? th.title + " (click to sort)" : "click to sort";
      th.addEventListener("click", function () {
        var next = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
        sortTable(table, column, next);
      });
    });
  });

  function columnOf(table, name) {
    var cells = table.tHead.rows[0].cells;
    for (var i = 0; i < cells.length; i++) { if (cells[i].getAttribute("data-key") === name) { return i; } }
    return -1;
  }

  document.querySelectorAll("button[data-sort-table]").forEach(function (button) {
    button.addEventListener("click", function () {
      var table = document.getElementById(button.getAttribute("data-sort-table"));
      var column = columnOf(table, button.getAttribute("data-sort-key"));
      if (column >= 0) {
        sortTable(table, column, button.getAttribute("data-sort-dir") === "desc" ? "descending" : "ascending");
      }
    });
  });

  // the case table starts ranked by the largest difference of the primary metric
  var first = document.querySelector("button[data-sort-table]");
  if (first) { first.click(); }

  // ------------------------------------------------------------ filters
  // Controls in <div class="filters" data-table="ID"> hide rows of that table: data-filter="text" (row's
  // data-text contains it), "status" (row's data-status), "missed" and "fp" (kinds shown; both: either),
  // "maxvol" (row's data-volume at most this).
  function applyFilters(box) {
    var table = document.getElementById(box.getAttribute("data-table"));
    var get = function (name) { return box.querySelector('[data-filter="' + name + '"]'); };
    var text = get("text"), status = get("status"), missed = get("missed"), fp = get("fp"), maxvol = get("maxvol");
    var query = text ? text.value.trim().toLowerCase() : "";
    var wantStatus = status ? status.value : "";
    var onlyMissed = missed ? missed.checked : false, onlyFp = fp ? fp.checked : false;
    var max = maxvol && maxvol.value !== "" ? Number(maxvol.value) : NaN;
    var shown = 0, rows = table.tBodies[0].rows;
    Array.prototype.forEach.call(rows, function (row) {
      var ok = true;
      if (query && (row.getAttribute("data-text") || "").indexOf(query) < 0) { ok = false; }
      if (wantStatus && row.getAttribute("data-status") !== wantStatus) { ok = false; }
      if (onlyMissed || onlyFp) {
        var isMissed = row.getAttribute("data-missed") === "1";
        var isFp = row.getAttribute("data-kind") === "false_positive";
        if (!((onlyMissed && isMissed) || (onlyFp && isFp))) { ok = false; }
      }
      if (!isNaN(max)) {
        var volume = row.getAttribute("data-volume");
        if (volume === "" || volume === null || Number(volume) > max) { ok = false; }
      }
      row.hidden = !ok;
      if (ok) { shown += 1; }
    });
    var counter = box.querySelector(".shown");
    if (counter) { counter.textContent = shown + " of " + rows.length + " rows shown"; }
  }

  document.querySelectorAll(".filters[data-table]").forEach(function (box) {
    box.querySelectorAll("[data-filter]").forEach(function (control) {
      control.addEventListener("input", function () { applyFilters(box); });
      control.addEventListener("change", function () { applyFilters(box); });
    });
    box.querySelectorAll("button[data-preset]").forEach(function (button) {
      button.addEventListener("click", function () {
        var preset = JSON.parse(button.getAttribute("data-preset"));
        Object.keys(preset).forEach(function (name) {
          var control = box.querySelector('[data-filter="' + name + '"]');
          if (!control) { return; }
          if (control.type === "checkbox") { control.checked = Boolean(preset[name]); } else { control.value = preset[name]; }
        });
        applyFilters(box);
      });
    });
    applyFilters(box);
  });

  // ------------------------------------------------------------ links into closed <details>
  // Any fragment is survived: one that is not valid percent-encoding (#%E0%A4%A) is taken as it stands.
  function fragmentId() {
    var raw = window.location.hash.slice(1);
    try { return decodeURIComponent(raw); } catch (e) { return raw; }
  }

  function showTarget() {
    var id = fragmentId();
    var target = id ? document.getElementById(id) || document.getElementById(window.location.hash.slice(1)) : null;
    if (!target) { return; }
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") { node.open = true; }
    }
    target.scrollIntoView({ block: "center" });
  }
  function openAll(open) {
    document.querySelectorAll("details.case").forEach(function (d) { d.open = open; });
  }
  var expand = document.getElementById("expand-all"), collapse = document.getElementById("collapse-all");
  if (expand) { expand.addEventListener("click", function () { openAll(true); }); }
  if (collapse) { collapse.addEventListener("click", function () { openAll(false); }); }

  window.addEventListener("hashchange", showTarget);
  showTarget();  // last: the page's controls work whatever the fragment does
}());
