/* datasette-dbrain-websearch: progressive enhancement for the research page.
 * Without this script the page works as a plain form; with it:
 * - a run that may search the web or ask a model shows live stage progress (local search,
 *   judge, each web provider, merge, how far the model has written) read from
 *   /-/research/stream, then opens the saved run, where the answer is shown verified;
 * - keyboard: "/" focuses the question, "j"/"k" move between rows, "o" opens, "p" saves a
 *   web row to the brain (or says why it cannot),
 *   "y" / "n" / "u" mark relevant / not relevant / unsure, "?" lists the keys; focus stays on
 *   the row after every action;
 * - the All / Your brain / Web tabs filter the list instead of jumping;
 * - marks (👍 👎 …) and promotions are posted in the background and change the row where it is:
 *   no reload, no second search; a mark reorders the rows as the saved run ranks them (👍 lifts
 *   a row, 👎 drops it) and the address then names the run (?run=), as it does after Expand;
 * - empty fields are left out of result URLs.
 * All text from the server is inserted with textContent, never as HTML.
 */
(function () {
  "use strict";

  // y: relevant, n: not relevant, u: unsure (clears what a mark did).
  var MARK_KEYS = { y: "relevant", n: "irrelevant", u: "unsure" };

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
      event.preventDefault();
      if (promote) {
        promote.click();
      } else {
        say(whyNotSaved(row), true);
      }
    } else if (MARK_KEYS[event.key] && row) {
      var mark = row.querySelector('.dbrain-mark[data-value="' + MARK_KEYS[event.key] + '"]');
      if (mark) {
        event.preventDefault();
        mark.click();
      }
    } else if (event.key === "?") {
      var keys = document.getElementById("dbrain-keys");
      if (keys) {
        event.preventDefault();
        keys.hidden = !keys.hidden;
      }
    }
  });

  function wantsStream(form) {
    var checked = form.querySelector('input[name="external"]:checked');
    var answer = form.querySelector('input[type="checkbox"][name="answer"]');
    var model = form.dataset.streamAnswer && answer && answer.checked;
    // Deep research's rounds, each with its queries and why, are shown as they run.
    var deep = form.querySelector('input[name="depth"]:checked');
    return Boolean((checked && checked.value !== "never") || model || deep);
  }

  function showWriting(panel, event) {
    // One line that says how far the model has got; its draft is never shown (the run page
    // shows the answer once every citation is checked).
    var line = panel.querySelector(".dbrain-step-writing");
    if (!line) {
      showStep(panel, event);
      return;
    }
    line.textContent = event.message || "";
  }

  function showStep(panel, event) {
    var item = document.createElement("li");
    item.className = "dbrain-step dbrain-step-" + (event.status || event.stage);
    item.textContent = event.message || event.stage;
    panel.querySelector("ol").appendChild(item);
    return item;
  }

  // Deep research's rounds, readable as they run: each round an item listing its queries and
  // why each was asked; a query's result ("2 new rows") is added to its line, and what a
  // follow-up's own search says meanwhile replaces a muted note on it (not a line of its own).
  function showDeep(panel, event, deep) {
    if (event.status === "round") {
      var item = document.createElement("li");
      item.className = "dbrain-step dbrain-step-round";
      var title = document.createElement("strong");
      title.textContent = "Round " + event.round + (event.round === 1 ? ": your question" : ": follow-ups");
      item.appendChild(title);
      var list = document.createElement("ul");
      list.className = "dbrain-round-queries";
      deep.queries = {};
      (event.queries || []).forEach(function (q) {
        var line = document.createElement("li");
        line.appendChild(document.createTextNode("\u201c" + q.query + "\u201d"));
        if (event.round > 1) {
          line.appendChild(document.createTextNode(" — " + q.why));
        }
        var note = document.createElement("span");
        note.className = "dbrain-round-note";
        line.appendChild(note);
        list.appendChild(line);
        deep.queries[q.query] = note;
      });
      item.appendChild(list);
      panel.querySelector("ol").appendChild(item);
      deep.round = event.round;
      deep.item = item;
      return;
    }
    if (event.status === "query" && deep.queries && deep.queries[event.query]) {
      var added = event.added === 1 ? "1 new row" : event.added + " new rows";
      deep.queries[event.query].textContent = " → " + added;
      deep.queries[event.query].classList.add("dbrain-round-added");
      return;
    }
    if (event.status === "done") {
      deep.round = 0;
      showStep(panel, event).classList.add("dbrain-step-stopped");
      return;
    }
    showStep(panel, event);
  }

  function filledParams(form) {
    var params = new URLSearchParams();
    new FormData(form).forEach(function (value, name) {
      if (String(value).trim() !== "") {
        params.append(name, value);
      }
    });
    return params;
  }

  async function streamRun(form, panel, seen) {
    var params = filledParams(form);
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
    var deep = { round: 0, queries: {}, item: null };
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
        if (event.stage === "answer" && event.status === "writing") {
          showWriting(panel, event);
          continue;
        }
        if (event.stage === "error") {
          showStep(panel, { stage: "error", status: "failed", message: event.error });
          return;
        }
        if (event.stage === "deep") {
          showDeep(panel, event, deep);
          continue;
        }
        if (deep.round > 1 && event.stage !== "answer") {
          // A follow-up's own search: a note on the round, not a line of its own.
          var notes = deep.item.querySelectorAll(".dbrain-round-note:not(.dbrain-round-added)");
          if (notes.length) {
            notes[0].textContent = " … " + (event.message || event.stage);
          }
          continue;
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
        // A plain search: leave empty fields out of the URL.
        event.preventDefault();
        window.location.assign(form.action + "?" + filledParams(form).toString());
        return;
      }
      event.preventDefault();
      var results = document.getElementById("dbrain-results");
      if (results) {
        results.hidden = true; // the panel takes the results' place: nothing below it moves
      }
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

  // The All / Your brain / Web tabs: filter the list in place.
  document.addEventListener("click", function (event) {
    var tab = event.target.closest && event.target.closest(".dbrain-tabs a[data-show]");
    if (!tab) {
      return;
    }
    var list = document.getElementById("dbrain-evidence");
    if (!list) {
      return;
    }
    event.preventDefault();
    list.dataset.show = tab.dataset.show;
    Array.prototype.forEach.call(document.querySelectorAll(".dbrain-tabs a"), function (a) {
      a.setAttribute("aria-current", a === tab ? "true" : "false");
    });
    // Tapped from the sticky switch far down the list (a phone): show the chosen rows from
    // their first.
    if (list.getBoundingClientRect().top < 0) {
      list.scrollIntoView({block: "start"});
    }
  });

  // The custom freshness range shows only when "Custom range" is chosen.
  function syncRange() {
    var select = document.getElementById("dbrain-freshness");
    var range = document.querySelector(".dbrain-range");
    if (select && range) {
      range.hidden = select.value !== "custom";
    }
  }
  document.addEventListener("change", function (event) {
    if (event.target && event.target.id === "dbrain-freshness") {
      syncRange();
    }
  });
  document.addEventListener("DOMContentLoaded", syncRange);
  // A run Expand made is named in the address too: reloading it is not a new search.
  document.addEventListener("DOMContentLoaded", function () {
    if (/[?&]refine_from=/.test(window.location.search)) {
      nameTheRun();
    }
  });

  // What "p" says on a row it cannot save: why not, in the page's own words.
  function whyNotSaved(row) {
    var refused = row.closest("[data-promote-refused]");
    if (row.dataset.origin === "local") {
      return "This row is already in your brain: only web rows can be saved to it.";
    }
    if (row.classList.contains("dbrain-row-promoted")) {
      return "This page is already in your brain.";
    }
    if (refused) {
      return refused.dataset.promoteRefused;
    }
    return "This run's web rows cannot be saved: it was not kept (see its warnings).";
  }

  // The toast (".dbrain-status", an aria-live region) says what an action did; a success goes
  // after a while, a failure stays until the next action.
  var sayTimer = null;
  function say(text, failed) {
    var status = document.querySelector(".dbrain-status");
    if (status) {
      status.textContent = text;
      status.classList.toggle("dbrain-status-failed", Boolean(failed));
      window.clearTimeout(sayTimer);
      if (!failed) {
        sayTimer = window.setTimeout(function () {
          status.textContent = "";
        }, 8000);
      }
    }
  }

  async function postInPlace(form, body) {
    var response = await fetch(form.action, {
      method: "POST",
      body: body,
      headers: { accept: "application/json" },
      credentials: "same-origin"
    });
    var reply = await response.json();
    if (!response.ok || !reply.ok) {
      throw new Error(reply.error || "HTTP " + response.status);
    }
    return reply;
  }

  function rowFor(key) {
    var rows = document.querySelectorAll(".dbrain-row");
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].dataset.sourceKey === key) {
        return rows[i];
      }
    }
    return null;
  }

  function showMark(key, value) {
    var row = rowFor(key);
    if (!row) {
      return;
    }
    Array.prototype.forEach.call(row.querySelectorAll(".dbrain-mark"), function (button) {
      var on = button.dataset.value === value;
      button.classList.toggle("dbrain-mark-on", on);
      button.setAttribute("aria-pressed", on ? "true" : "false");
    });
    var menu = row.querySelector(".dbrain-more-marks");
    if (menu) {
      menu.open = false;
    }
  }

  // The rows in the order the server now ranks the run (``ranking`` of the mark's reply), as
  // the saved run shows them: "From the web" before the first web row.
  function applyRanking(ranking) {
    var list = document.getElementById("dbrain-evidence");
    if (!list || !ranking || !ranking.length) {
      return;
    }
    var divider = list.querySelector(".dbrain-divider");
    var placed = [];
    ranking.forEach(function (entry) {
      var row = rowFor(entry.source_key);
      if (!row || placed.indexOf(row) !== -1) {
        return;
      }
      if (divider && entry.list === "external_evidence" && placed.indexOf(divider) === -1) {
        list.appendChild(divider);
        placed.push(divider);
      }
      list.appendChild(row);
      placed.push(row);
    });
  }

  // After a mark the address names the run (``?run=``): a reload, the back button or a shared
  // link shows these rows, marks and words, not a new search.
  function nameTheRun() {
    var next = document.querySelector('#dbrain-feedback input[name="next"]');
    if (next && next.value && window.history && window.history.replaceState) {
      window.history.replaceState(window.history.state, "", next.value);
    }
  }

  function showRefinement(refinement) {
    var section = document.querySelector(".dbrain-refine");
    if (!section || !refinement) {
      return;
    }
    section.querySelector(".dbrain-refined-terms").textContent = refinement.added_terms.length
      ? refinement.added_terms.join(", ")
      : "no new words yet";
    section.hidden = false;
  }

  function showPromoted(result) {
    var row = rowFor(result.source_key);
    var controls = row && row.querySelector(".dbrain-promote-row");
    if (!controls) {
      return;
    }
    var done = document.createElement("p");
    done.className = "dbrain-promoted";
    done.appendChild(document.createTextNode("In your brain now: "));
    var link = document.createElement("a");
    link.href = result.row_url;
    var code = document.createElement("code");
    code.textContent = result.local_source_key;
    link.appendChild(code);
    done.appendChild(link);
    if (result.tags) {
      var tags = document.createElement("span");
      tags.className = "dbrain-note";
      tags.textContent = " · tags: " + result.tags;
      done.appendChild(tags);
    }
    if (result.note_key) {
      var kept = document.createElement("span");
      kept.className = "dbrain-note";
      kept.textContent = " · your note: " + result.note_key;
      done.appendChild(kept);
    }
    if (result.fetch === "failed") {
      var note = document.createElement("span");
      note.className = "dbrain-note";
      note.textContent = " (the page could not be fetched: kept the provider's text; dbrain will retry)";
      done.appendChild(note);
    }
    controls.replaceWith(done);
    // A brain row now: no longer ephemeral, badged as the saved run page shows it.
    var badge = row.querySelector(".dbrain-badge-external");
    if (badge) {
      badge.className = "dbrain-badge dbrain-badge-local";
      badge.title = "Found on the web in this run, then saved: now a sources row of your brain";
      badge.textContent = "Saved to your brain";
    }
    row.classList.add("dbrain-row-promoted");
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    var feedback = form.id === "dbrain-feedback";
    var promote = form.classList && form.classList.contains("dbrain-promote-form");
    if ((!feedback && !promote) || !window.fetch) {
      return;
    }
    event.preventDefault();
    var submitter = event.submitter;
    var body = new URLSearchParams(new FormData(form, submitter)); // before disabling it
    // Whatever changes above it, the row acted on stays where it is on the screen.
    var anchor = (submitter && submitter.closest(".dbrain-row")) || submitter || form;
    var top = anchor.getBoundingClientRect().top;
    if (submitter) {
      submitter.disabled = true;
    }
    var dropping = feedback && submitter && /\|irrelevant$/.test(submitter.value || "");
    // Focus stays where it was (the button, or the row's title when a key did it): a
    // disabled or moved element would drop it to the page and lose the reader's place.
    var focused = document.activeElement;
    postInPlace(form, body)
      .then(function (reply) {
        if (feedback) {
          reply.feedback.forEach(function (mark) {
            showMark(mark.key, mark.value);
          });
          var marked = submitter ? rowFor(submitter.value.split("|")[0]) : null;
          var successor = marked ? marked.nextElementSibling : null;
          while (successor && !successor.classList.contains("dbrain-row")) {
            successor = successor.nextElementSibling;
          }
          if (dropping && marked) {
            marked.classList.add("dbrain-row-dropped");
          }
          var before = marked ? rows().indexOf(marked) : -1;
          applyRanking(reply.ranking);
          var after = marked ? rows().indexOf(marked) : -1;
          if (marked && after !== before && successor) {
            // Moved as the saved run moves it (👍 lifts, 👎 drops): the screen keeps still, and
            // the row that takes its place is the one the reader is on now (a keyboard triage
            // goes on down the list); the status says where a lifted row went.
            anchor = successor;
            var taking = successor.querySelector && successor.querySelector(".dbrain-title");
            focused = taking || focused;
          }
          nameTheRun();
          showRefinement(reply.refinement);
          say(
            "Saved your mark." +
              (!dropping && after < before ? " The row moved up to " + (after + 1) + "." : "")
          );
        } else {
          reply.results.forEach(showPromoted);
          say(reply.results.map(function (r) { return r.message; }).join(" "));
        }
      })
      .catch(function (error) {
        say((feedback ? "Mark not saved: " : "Nothing promoted: ") + error.message, true);
      })
      .finally(function () {
        if (submitter) {
          submitter.disabled = false;
        }
        if (focused && focused.isConnected && focused !== document.body) {
          focused.focus({ preventScroll: true });
        } else if (anchor.isConnected && anchor.querySelector) {
          var fallback = anchor.querySelector(".dbrain-title");
          if (fallback) {
            fallback.focus({ preventScroll: true });
          }
        }
        if (anchor.isConnected) {
          window.scrollBy(0, anchor.getBoundingClientRect().top - top);
        }
      });
  });
})();
