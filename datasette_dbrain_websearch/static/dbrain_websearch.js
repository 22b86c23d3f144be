/* datasette-dbrain-websearch: progressive enhancement for the research page.
 * Without this script the page works as a plain form; with it:
 * - a run that may search the web or ask a model shows live stage progress (local search,
 *   judge, each web provider, merge, the model's draft answer as it is written) read from
 *   /-/research/stream, then opens the saved run, where the answer is shown verified;
 * - keyboard: "/" focuses the question, "j"/"k" move between rows, "o" opens, "p" promotes.
 * All text from the server is inserted with textContent, never as HTML.
 */
(function () {
  "use strict";

  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll(".dbrain-row"));
  }

  function currentRow() {
    var active = document.activeElement;
    return active && active.closest ? active.closest(".dbrain-row") : null;
  }

  function focusRow(row) {
    var link = row && row.querySelector(".dbrain-title");
    if (link) {
      link.focus();
      row.scrollIntoView({ block: "nearest" });
    }
  }

  function typing(target) {
    var tag = (target.tagName || "").toLowerCase();
    return tag === "input" || tag === "textarea" || tag === "select" || target.isContentEditable;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) {
      return;
    }
    var list = rows();
    var row = currentRow();
    var index = row ? list.indexOf(row) : -1;
    if (event.key === "/") {
      var q = document.getElementById("dbrain-q");
      if (q) {
        event.preventDefault();
        q.focus();
        q.select();
      }
    } else if (event.key === "j" && list.length) {
      event.preventDefault();
      focusRow(list[Math.min(index + 1, list.length - 1)]);
    } else if (event.key === "k" && list.length) {
      event.preventDefault();
      focusRow(list[Math.max(index - 1, 0)]);
    } else if (event.key === "o" && row) {
      var link = row.querySelector(".dbrain-title");
      if (link && link.href) {
        event.preventDefault();
        link.click();
      }
    } else if (event.key === "p" && row) {
      var promote = row.querySelector(".dbrain-promote");
      if (promote) {
        event.preventDefault();
        promote.click();
      }
    }
  });

  function wantsStream(form) {
    var checked = form.querySelector('input[name="external"]:checked');
    var answer = form.querySelector('input[type="checkbox"][name="answer"]');
    var model = form.dataset.streamAnswer && answer && answer.checked;
    return Boolean((checked && checked.value !== "never") || model);
  }

  function showDraft(panel, text) {
    var draft = panel.querySelector(".dbrain-draft");
    if (!draft) {
      var label = document.createElement("p");
      label.className = "dbrain-note";
      label.textContent = "Draft answer (its citations are checked when it is finished):";
      draft = document.createElement("p");
      draft.className = "dbrain-draft";
      panel.appendChild(label);
      panel.appendChild(draft);
    }
    draft.textContent += text;
  }

  function showStep(panel, event) {
    var item = document.createElement("li");
    item.className = "dbrain-step dbrain-step-" + (event.status || event.stage);
    item.textContent = event.message || event.stage;
    panel.querySelector("ol").appendChild(item);
  }

  async function streamRun(form, panel, seen) {
    var params = new URLSearchParams(new FormData(form));
    var response = await fetch(form.dataset.streamUrl + "?" + params.toString(), {
      headers: { accept: "application/x-ndjson" },
      credentials: "same-origin"
    });
    if (!response.ok || !response.body) {
      throw new Error("stream unavailable");
    }
    var reader = response.body.getReader();
    var decoder = new TextDecoder();
    var buffer = "";
    for (;;) {
      var chunk = await reader.read();
      if (chunk.done) {
        break;
      }
      buffer += decoder.decode(chunk.value, { stream: true });
      var lines = buffer.split("\n");
      buffer = lines.pop();
      for (var i = 0; i < lines.length; i++) {
        if (!lines[i].trim()) {
          continue;
        }
        var event = JSON.parse(lines[i]);
        seen.count += 1;
        if (event.stage === "done") {
          showStep(panel, { stage: "done", message: "Done: opening the results" });
          window.location.assign(event.url);
          return;
        }
        if (event.stage === "answer" && event.status === "delta") {
          showDraft(panel, event.text || "");
          continue;
        }
        if (event.stage === "error") {
          showStep(panel, { stage: "error", status: "failed", message: event.error });
          return;
        }
        showStep(panel, event);
      }
    }
    throw new Error("stream ended early");
  }

  document.addEventListener("DOMContentLoaded", function () {
    var form = document.querySelector(".dbrain-form[data-stream-url]");
    var panel = document.getElementById("dbrain-progress");
    if (!form || !panel || !window.fetch || !window.TextDecoder) {
      return;
    }
    form.addEventListener("submit", function (event) {
      if (!wantsStream(form)) {
        return;
      }
      event.preventDefault();
      panel.hidden = false;
      panel.querySelector("ol").textContent = "";
      Array.prototype.forEach.call(panel.querySelectorAll(".dbrain-draft, .dbrain-note"), function (el) {
        el.remove();
      });
      var seen = { count: 0 };
      streamRun(form, panel, seen).catch(function () {
        if (!seen.count) {
          form.submit(); // nothing started: the plain form does the same work in one request
          return;
        }
        // The run started and may still finish and be saved: do not pay for a second search.
        showStep(panel, {
          stage: "error",
          status: "failed",
          message: "Live progress was interrupted; the run may still finish: see Runs."
        });
      });
    });
  });
})();
