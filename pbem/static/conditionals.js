// The game page's conditional-moves panel: build a line by clicking on the board of the position it
// reaches (or on the legal moves listed under it), then queue it.  The panel lives in the part of the
// page that board.js swaps after each move, so everything here is found afresh on every click.
// Without this script the panel still works: type the line and press Queue.
(function () {
  "use strict";
  var line = [];      // the moves of the line built so far
  var legal = [];     // the legal moves of the side to move where the line leads
  var clicked = [];   // board fragments clicked towards the next move, in order
  var LISTED = 40;    // moves listed as buttons when there are this few (or when clicks narrow them)

  function byId(id) { return document.getElementById(id); }

  function text() { return line.length ? "if " + line.join(" then ") : ""; }

  // The legal moves that fit the board clicks so far, matched as the move composer matches them
  // (moves.js), so that the same clicks pick the same move here and on the game's own board.
  function fitting() { return window.pbemMoves.candidates(legal, clicked); }

  function button(label, onClick) {
    var b = document.createElement("button");
    b.type = "button";
    b.className = "secondary";
    b.textContent = label;
    b.addEventListener("click", onClick);
    return b;
  }

  function listMoves() {
    var box = byId("builder-moves");
    if (!box) return;
    box.innerHTML = "";
    var left = fitting();
    if (left.length === 1 && clicked.length) { add(left[0]); return; }
    if (left.length <= LISTED) {
      left.forEach(function (move) { box.append(button(move, function () { add(move); })); });
    } else {
      // The clicks may be a whole move of their own (Truchet's step "c3-b4", though its longer and flip
      // versions fit them too): it is offered, since no further click would single it out.
      var whole = left.filter(function (move) { return window.pbemMoves.exact(move, clicked); });
      box.textContent = left.length + " moves: click the board to narrow them down" +
        (whole.length ? ", or pick: " : ".");
      whole.forEach(function (move) { box.append(button(move, function () { add(move); })); });
    }
  }

  function add(move) {
    line.push(move);
    load();
  }

  function load() {
    var panel = byId("conditionals");
    if (!panel) return;
    clicked = [];
    var url = new URL(panel.getAttribute("data-preview-url"), window.location.href);
    url.searchParams.set("line", text());
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (response) { return response.json(); })
      .then(function (answer) {
        var prompt = byId("builder-prompt");
        if (!prompt) return;
        byId("conditional-builder").hidden = false;
        if (!answer.ok) { prompt.textContent = answer.message; line.pop(); return; }
        legal = answer.moves;
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
        listMoves();
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
      var fragment = piece.getAttribute("data-move");
      if (legal.indexOf(fragment) >= 0) { add(fragment); return; }
      clicked = clicked.indexOf(fragment) >= 0 ? clicked : clicked.concat([fragment]);
      if (!fitting().length) clicked = [fragment];
      listMoves();
    }
  });
  new MutationObserver(reveal).observe(document.body, { childList: true, subtree: true });
  reveal();
})();
