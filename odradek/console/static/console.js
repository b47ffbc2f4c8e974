// The odradek console's page script: confirmations on change forms, and the messages page
// (browse, formats, live tail over server-sent events, export of what is shown).
"use strict";

document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form.dataset ? form.dataset.confirm : null;
  if (question && !window.confirm(question)) event.preventDefault();
});

(() => {
  const browseForm = document.getElementById("browse");
  if (!browseForm) return;
  const topic = browseForm.dataset.topic;
  const tbody = document.querySelector("#records tbody");
  const status = document.getElementById("status");
  const errorBox = document.getElementById("error");
  const formatSelect = document.getElementById("format");
  const tailButton = document.getElementById("tail");
  const decoder = new TextDecoder("utf-8");
  let shown = [];          // the records on the page, in order, as the server sent them
  let next = {};           // partition -> the offset after the last record read
  let source = null;       // the live tail's EventSource
  let tailed = 0;

  function bytes(b64) {
    if (b64 === null) return null;
    const raw = atob(b64);
    const out = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
    return out;
  }
  function render(b64, format) {
    const data = bytes(b64);
    if (data === null) return null;
    if (format === "hex") {
      return Array.from(data, (x) => x.toString(16).padStart(2, "0")).join(" ");
    }
    const text = decoder.decode(data);
    if (format === "json") {
      try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }
    }
    return text;
  }
  function isoTime(ms) { return ms < 0 ? "-" : new Date(ms).toISOString(); }
  // A record as shown (and exported): key, value and header values in the chosen format.
  function displayed(r, format) {
    return {
      partition: r.partition,
      offset: r.offset,
      timestamp: r.timestamp,
      key: render(r.key, format),
      value: render(r.value, format),
      headers: r.headers.map(([k, v]) => [k, render(v, format)]),
    };
  }
  function cell(text, cls) {
    const td = document.createElement("td");
    if (cls) td.className = cls;
    if (text === null) { td.textContent = "null"; td.classList.add("null"); }
    else td.textContent = text;
    return td;
  }
  function row(r, format) {
    const d = displayed(r, format);
    const tr = document.createElement("tr");
    tr.dataset.partition = d.partition;
    tr.dataset.offset = d.offset;
    tr.append(cell(String(d.partition), "r"), cell(String(d.offset), "r offset"),
      cell(isoTime(d.timestamp), "ts"), cell(d.key, "key"), cell(d.value, "value"),
      cell(d.headers.map(([k, v]) => `${k}: ${v === null ? "null" : v}`).join("\n"), "headers"));
    return tr;
  }
  function append(records) {
    const format = formatSelect.value;
    const fragment = document.createDocumentFragment();
    for (const r of records) { shown.push(r); fragment.append(row(r, format)); }
    tbody.append(fragment);
  }
  function redraw() { const all = shown; shown = []; tbody.replaceChildren(); append(all); }
  function showError(text) { errorBox.textContent = text; errorBox.hidden = !text; }
  function query() {
    const form = new FormData(browseForm);
    const params = new URLSearchParams();
    for (const [k, v] of form.entries()) if (v !== "") params.set(k, v);
    if (params.get("seek") === "timestamp" && params.has("value") && !/^\d+$/.test(params.get("value"))) {
      const ms = Date.parse(params.get("value"));
      if (!Number.isNaN(ms)) params.set("value", String(ms));
    }
    return params;
  }
  function stopTail() {
    if (source) { source.close(); source = null; }
    tailButton.textContent = "Live tail";
    tailButton.classList.remove("on");
  }
  async function load(event) {
    if (event) event.preventDefault();
    stopTail();
    showError("");
    status.textContent = "loading…";
    const response = await fetch(`/api/topics/${encodeURIComponent(topic)}/messages?${query()}`,
      { headers: { Accept: "application/json" }, credentials: "same-origin" });
    const body = await response.json();
    if (!response.ok) { status.textContent = ""; shown = []; tbody.replaceChildren(); showError(body.error); return; }
    shown = []; tbody.replaceChildren();
    append(body.records);
    next = body.next;
    status.textContent = `${body.records.length} shown, ${body.scanned} read` + (body.truncated ? " (stopped early: narrow the search)" : "");
    document.body.dataset.loaded = String(Date.now());
  }
  function startTail() {
    const params = new URLSearchParams();
    params.set("from", Object.entries(next).map(([p, o]) => `${p}:${o}`).join(","));
    const q = query();
    for (const k of ["field", "pattern", "regex"]) if (q.has(k)) params.set(k, q.get(k));
    tailed = 0;
    source = new EventSource(`/api/topics/${encodeURIComponent(topic)}/tail?${params}`);
    source.onmessage = (event) => {
      const records = JSON.parse(event.data);
      tailed += records.length;
      append(records);
      for (const r of records) next[r.partition] = r.offset + 1;
      status.textContent = `live: ${tailed} new, ${shown.length} shown`;
      document.body.dataset.tailed = String(tailed);
    };
    source.addEventListener("refusal", (event) => { showError(JSON.parse(event.data)); stopTail(); });
    source.onopen = () => { status.textContent = `live: ${tailed} new, ${shown.length} shown`; document.body.dataset.tail = "open"; };
    tailButton.textContent = "Stop tail";
    tailButton.classList.add("on");
  }
  function exportText(kind) {
    const format = formatSelect.value;
    const rows = shown.map((r) => displayed(r, format));
    if (kind === "json") return JSON.stringify(rows, null, 2);
    const quote = (v) => (v === null ? "" : `"${String(v).replaceAll('"', '""')}"`);
    const lines = ["partition,offset,timestamp,key,value,headers"];
    for (const d of rows) {
      lines.push([d.partition, d.offset, d.timestamp, quote(d.key), quote(d.value),
        quote(JSON.stringify(d.headers))].join(","));
    }
    return lines.join("\r\n") + "\r\n";
  }
  function download(kind) {
    const blob = new Blob([exportText(kind)], { type: kind === "json" ? "application/json" : "text/csv" });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = `${topic}.${kind}`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  }
  window.odradekConsole = { exportText, shown: () => shown };
  browseForm.addEventListener("submit", load);
  formatSelect.addEventListener("change", redraw);
  tailButton.addEventListener("click", () => (source ? stopTail() : startTail()));
  document.getElementById("export-json").addEventListener("click", () => download("json"));
  document.getElementById("export-csv").addEventListener("click", () => download("csv"));
  load();
})();
