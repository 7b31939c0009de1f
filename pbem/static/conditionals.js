// The game page's conditional-moves panel: build a line by clicking on the board of the position it
// reaches (or on the legal moves listed under it), then queue it.  The panel lives in the part of the
// page that board.js swaps after each move, so everything here is found afresh on every click.
// Without this script the panel still works: type the line and press Queue.
(function () {
  "use strict";
  var line = [];      // the moves of the line built so far
  // The next move, picked by clicks on the board of the position the line reaches or from the moves
  // listed under it, matched as the move composer matches clicks (moves.js).
  var picker = window.pbemMoves.picker("builder-moves", function (move) { add(move); });

  function byId(id) { return document.getElementById(id); }

  function text() { return line.length ? "if " + line.join(" then ") : ""; }

  function add(move) {
    line.push(move);
    load();
  }

  function load() {
    var panel = byId("conditionals");
    if (!panel) return;
    var url = new URL(panel.getAttribute("data-preview-url"), window.location.href);
    url.searchParams.set("line", text());
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (response) { return response.json(); })
      .then(function (answer) {
        var prompt = byId("builder-prompt");
        if (!prompt) return;
        byId("conditional-builder").hidden = false;
        if (!answer.ok) { prompt.textContent = answer.message; line.pop(); return; }
        var legal = answer.moves;
        byId("conditional-line").value = answer.line;
        byId("builder-board").innerHTML = answer.svg;
        byId("builder-undo").hidden = !line.length;
        if (!legal.length) {
          prompt.textContent = "The game would be over here: queue the line as it is.";
        } else if (answer.theirs) {
          prompt.textContent = (line.length ? "Then if your opponent plays" : "If your opponent plays") +
            " (click the board or a move):";
        } else {
          prompt.textContent = "Your answer (click the board or a move):";
        }
        picker.moves(legal, answer.spellings);
      })
      .catch(function () {
        var prompt = byId("builder-prompt");
        if (prompt) prompt.textContent = "The server did not answer; try again.";
      });
  }

  function start() {
    var typed = byId("conditional-line");
    line = [];
    if (typed && typed.value.trim()) {
      line = typed.value.trim().replace(/^if\s+/i, "").split(/\s+then\s+/i).filter(Boolean);
    }
    load();
  }

  // The panel is replaced after every move: show its button and listen on the document.
  function reveal() {
    var build = byId("build-conditional");
    if (build) build.hidden = false;
  }

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!(target instanceof Element)) return;
    if (target.id === "build-conditional") { start(); return; }
    if (target.id === "builder-undo") { line.pop(); load(); return; }
    var piece = target.closest("#builder-board [data-move]");
    if (piece) {
      event.preventDefault();
      picker.click(piece.getAttribute("data-move"));
    }
  });
  new MutationObserver(reveal).observe(document.body, { childList: true, subtree: true });
  reveal();
})();
