/* kb docs helper: add a "Troubleshoot" panel to any page with one tag:
 *   <script src="http://HOST:PORT/widget.js" data-kb-url="http://HOST:PORT"></script>
 * Optional: data-kb-llm="true" (ask the local model too; slower), data-kb-title="...".
 * Self-contained: no CDN, no build step. Untrusted text is only ever set with textContent.
 */
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script) { return; }
  var base = (script.getAttribute("data-kb-url") || new URL(script.src).origin).replace(/\/+$/, "");
  var useLlm = script.getAttribute("data-kb-llm") === "true";
  var title = script.getAttribute("data-kb-title") || "Troubleshoot a training run";
  var SLUG = /^[a-z0-9][a-z0-9-]{0,120}$/;

  var host = document.createElement("div");
  host.id = "kb-widget";
  document.body.appendChild(host);
  var root = host.attachShadow ? host.attachShadow({ mode: "open" }) : host;

  var style = document.createElement("style");
  style.textContent = [
    ".kb-btn{position:fixed;right:20px;bottom:20px;z-index:2147483000;background:#1f6feb;color:#fff;",
    "border:0;border-radius:20px;padding:10px 16px;font:14px sans-serif;cursor:pointer;box-shadow:0 2px 8px #0004}",
    ".kb-panel{position:fixed;right:20px;bottom:70px;z-index:2147483000;width:min(460px,92vw);max-height:75vh;",
    "overflow:auto;background:#fff;color:#111;border:1px solid #ccc;border-radius:8px;padding:12px;",
    "font:14px/1.45 sans-serif;box-shadow:0 4px 16px #0003;display:none}",
    ".kb-panel textarea{width:100%;box-sizing:border-box;height:110px;font:12px monospace}",
    ".kb-panel button{margin-top:6px}",
    ".kb-answer{white-space:pre-wrap;font:13px/1.45 sans-serif;margin-top:10px}",
    ".kb-hits a{display:block;margin:2px 0}",
    ".kb-error{color:#b00020;margin-top:8px}"
  ].join("");
  root.appendChild(style);

  var button = document.createElement("button");
  button.className = "kb-btn";
  button.type = "button";
  button.textContent = "Troubleshoot";
  root.appendChild(button);

  var panel = document.createElement("div");
  panel.className = "kb-panel";
  panel.setAttribute("role", "dialog");
  panel.setAttribute("aria-label", title);
  var heading = document.createElement("b");
  heading.textContent = title;
  var input = document.createElement("textarea");
  input.placeholder = "Paste the error, traceback or log lines (粘贴报错或日志)";
  input.className = "kb-input";
  var ask = document.createElement("button");
  ask.type = "button";
  ask.className = "kb-ask";
  ask.textContent = "Diagnose";
  var status = document.createElement("div");
  var hits = document.createElement("div");
  hits.className = "kb-hits";
  var answer = document.createElement("div");
  answer.className = "kb-answer";
  [heading, input, ask, status, hits, answer].forEach(function (el) { panel.appendChild(el); });
  root.appendChild(panel);

  button.addEventListener("click", function () {
    panel.style.display = panel.style.display === "block" ? "none" : "block";
    if (panel.style.display === "block") { input.focus(); }
  });

  function clear(el) { while (el.firstChild) { el.removeChild(el.firstChild); } }

  ask.addEventListener("click", function () {
    var query = input.value.trim();
    clear(hits); clear(answer); status.className = ""; status.textContent = "";
    if (!query) { status.className = "kb-error"; status.textContent = "Paste an error or a log first."; return; }
    ask.disabled = true;
    status.textContent = "Diagnosing…";
    fetch(base + "/api/ask", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ query: query.slice(0, 200000), no_llm: !useLlm })
    }).then(function (resp) {
      return resp.json().then(function (doc) { return { ok: resp.ok, doc: doc }; });
    }).then(function (r) {
      ask.disabled = false;
      if (!r.ok) { status.className = "kb-error"; status.textContent = r.doc.error || "kb could not answer."; return; }
      var doc = r.doc;
      status.textContent = doc.abstained ? "No known case matches. Nearest cases:" : "Matched cases:";
      (doc.hits || []).slice(0, 3).forEach(function (h) {
        var link = document.createElement("a");
        link.textContent = h.title + " [" + h.failure_mode + "]";
        if (SLUG.test(h.article_id)) {
          link.href = base + "/articles/" + h.article_id;
          link.target = "_blank";
          link.rel = "noopener";
        }
        hits.appendChild(link);
      });
      var text = (doc.answer && doc.answer.text) || "";
      if (doc.answer && doc.answer.llm_text) { text = doc.answer.llm_text + "\n\n" + text; }
      answer.textContent = text;
    }).catch(function () {
      ask.disabled = false;
      status.className = "kb-error";
      status.textContent = "Cannot reach kb at " + base + ".";
    });
  });
})();
