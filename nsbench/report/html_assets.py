"""report.html's style sheet and script: sortable tables, filter boxes, the
listening grid's players. Inline, so the page is one file that opens anywhere.
"""

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; overflow-wrap: anywhere; }
/* The page never scrolls sideways: a table wider than the window (the heat
   map, the listening grid) scrolls inside its own box. */
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; display: block; max-width: 100%; overflow-x: auto; }
td, th { overflow-wrap: normal; }
pre { max-width: 100%; overflow-x: auto; }
#ranked td:first-child, #ranked td:nth-child(2) { white-space: nowrap; font-weight: bold; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[aria-sort=ascending]::after { content: " \\25B2"; }
table.sortable th[aria-sort=descending]::after { content: " \\25BC"; }
.flag { color: #a00; font-weight: bold; }
.ok { color: #070; }
.oracle { font-style: italic; color: #555; }
figure { margin: 0; }
figure.plot { border: 1px solid #ccc; padding: 0.5em; margin: 0 0 2em 0; width: fit-content; max-width: 100%; }
figure.plot figcaption { font-weight: bold; margin-bottom: 0.25em; }
figure.plot img { border: none; margin: 0; }
tr.oracle-row th, tr.oracle-row td { border-top: 2px dashed #888; font-style: italic; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
#grid td { min-width: 240px; }
#grid img { display: block; margin: 0.25em 0; }
#grid audio { width: 240px; }
#heatmap td.value { text-align: right; font-variant-numeric: tabular-nums; }
input.filter { margin: 0.5em 0; width: 24em; }
"""

# Sorting and filtering, written into the page (no network, no library).
# Numbers sort as numbers ("[1.2, 3.4]" by its first), "–" (no value) always last.
SCRIPT = """
function sortValue(text) {
  const match = text.trim().match(/^[\\[(]?\\s*([-+]?\\d+(?:\\.\\d+)?(?:e[-+]?\\d+)?)/i);
  return match ? parseFloat(match[1]) : null;
}
function compareCells(a, b, ascending) {
  const x = sortValue(a), y = sortValue(b);
  const missingA = a.trim() === "\u2013" || a.trim() === "", missingB = b.trim() === "\u2013" || b.trim() === "";
  if (missingA !== missingB) return missingA ? 1 : -1;
  let order;
  if (x !== null && y !== null) order = x - y;
  else if (x !== null || y !== null) order = x !== null ? -1 : 1;
  else order = a.localeCompare(b, undefined, {numeric: true});
  return ascending ? order : -order;
}
function sortTable(table, column, header) {
  const ascending = header.getAttribute("aria-sort") !== "ascending";
  table.querySelectorAll("thead th").forEach(th => th.removeAttribute("aria-sort"));
  header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  rows.sort((r, s) => compareCells(r.cells[column].textContent, s.cells[column].textContent, ascending));
  rows.forEach(row => body.appendChild(row));
}
function filterTable(box) {
  const table = document.getElementById(box.dataset.table);
  const headers = Array.from(table.tHead.rows[0].cells).map(th => th.textContent.trim().toLowerCase());
  const terms = box.value.toLowerCase().split(/\\s+/).filter(Boolean);
  let shown = 0;
  Array.from(table.tBodies[0].rows).forEach(row => {
    const cells = Array.from(row.cells).map(td => td.textContent.trim().toLowerCase());
    const text = cells.join(" ");
    const keep = terms.every(term => {
      const [key, value] = term.split("=");
      const column = value === undefined ? -1 : headers.indexOf(key);
      return column >= 0 ? cells[column] === value : text.includes(term);
    });
    row.hidden = !keep;
    shown += keep;
  });
  const count = document.getElementById(box.dataset.table + "-count");
  if (count) count.textContent = shown + " of " + table.tBodies[0].rows.length + " rows";
}
document.querySelectorAll("table.sortable").forEach(table => {
  table.querySelectorAll("thead th").forEach((header, column) =>
    header.addEventListener("click", () => sortTable(table, column, header)));
});
document.querySelectorAll("input.filter").forEach(box => box.addEventListener("input", () => filterTable(box)));
"""
