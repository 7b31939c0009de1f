// The game page's analysis board: try moves from the position shown (a replayed one, or the game as it
// stands) without playing them, step back and forth through the line tried, and queue it as conditional
// moves in one click.  Every position comes from the server's engine (/games/<id>/analysis), which
// never changes the game; the answers are kept, so stepping back and forth asks for each position once.
(function () {
  "use strict";
  var from = null;   // the record position the line starts from (null until the server has said)
  var line = [];     // the moves tried, as the record writes them
  var cursor = 0;    // how many of them the board shows
  var firstMover = null;  // the seat that moves first in the line
  var answers = {};  // the server's answers, by line
  var picker = window.pbemMoves.picker("analysis-moves", function (move) { tryMove(move); });

  function byId(id) { return document.getElementById(id); }

  function seat() {
    var chooser = byId("analysis-seat");
    return chooser ? chooser.value : "";
  }

  function ask(n) {
    var key = JSON.stringify([from, seat(), line.slice(0, n)]);
    if (answers[key]) return Promise.resolve(answers[key]);
    var url = new URL(byId("analysis").getAttribute("data-url"), window.location.href);
    if (from !== null) url.searchParams.set("at", String(from));
    if (seat()) url.searchParams.set("seat", seat());
    line.slice(0, n).forEach(function (move) { url.searchParams.append("move", move); });
    return fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (response) { return response.json(); })
      .then(function (answer) {
        if (answer.ok) answers[key] = answer;
        return answer;
      });
  }

  function show() {
    var n = cursor;
    var where = byId("analysis-where");
    ask(n).then(function (answer) {
      if (n !== cursor) return;  // A later step was asked for meanwhile.
      if (!answer.ok) { where.textContent = answer.message; return; }
      if (from === null) from = answer.at;  // Kept: the opponent's next move does not move the start.
      if (n === 0) firstMover = answer.mover;
      var start = answer.at === 0 ? "the start" : "move " + answer.at;
      where.textContent = (n ? "After " + line.slice(0, n).join(", ") + " (tried from " + start + "): "
                             : "From " + start + ": ") + answer.words;
      byId("analysis-board").innerHTML = answer.svg;
      picker.moves(answer.moves, answer.spellings);
      if (!answer.moves.length) byId("analysis-moves").textContent = "No move can be tried here.";
      listLine();
      offerConditional(answer);
    }).catch(function () {
      where.textContent = "The server did not answer; try again.";
    });
  }

  function tryMove(move) {
    if (line[cursor] !== move) line = line.slice(0, cursor).concat([move]);
    cursor += 1;
    show();
  }

  function step(n) {
    cursor = Math.max(0, Math.min(n, line.length));
    show();
  }

  // The line tried, each move a button that shows the position after it.
  function listLine() {
    var list = byId("analysis-line");
    list.innerHTML = "";
    line.forEach(function (move, i) {
      var item = document.createElement("li");
      var b = document.createElement("button");
      b.type = "button";
      b.className = "link";
      b.textContent = move;
      b.addEventListener("click", function () { step(i + 1); });
      item.append(b);
      item.classList.toggle("current", i + 1 === cursor);
      list.append(item);
    });
    byId("analysis-start").disabled = cursor === 0;
    byId("analysis-back").disabled = cursor === 0;
    byId("analysis-forward").disabled = cursor >= line.length;
    byId("analysis-end").disabled = cursor >= line.length;
  }

  // A line tried from the position as it stands, the opponent moving first, can be queued as conditional
  // moves: up to the position shown, ending with the viewer's answer.  The conditional panel's own form
  // sends it (board.js posts it and redraws the panel with the line).
  function offerConditional(answer) {
    var offer = byId("analysis-conditional");
    var hint = byId("analysis-conditional-hint");
    var form = byId("conditional-form");
    offer.hidden = true;
    hint.textContent = "";
    var now = document.querySelector("#live .live");
    if (!form && now && now.getAttribute("data-my-turn") === "yes" && answer.at === answer.last) {
      hint.textContent = "It is your move: once you have played it, a line tried from there can become " +
        "conditional moves.";
    }
    if (!form) return;
    var mine = form.querySelector("[name=seat]").value;
    if (answer.at !== answer.last) {
      hint.textContent = "Only a line tried from the position as it stands can become conditional moves.";
      return;
    }
    if (firstMover === null || String(firstMover) === mine) return;
    var moves = line.slice(0, cursor - (cursor % 2));
    if (!moves.length) {
      hint.textContent = "Try your opponent's move and your answer to queue them as conditional moves.";
      return;
    }
    offer.textContent = "Queue as conditional moves: if " + moves.join(" then ");
    offer.dataset.line = "if " + moves.join(" then ");
    offer.hidden = false;
  }

  function open() {
    var panel = byId("analysis");
    var replay = byId("replay");
    from = replay ? parseInt(replay.getAttribute("data-at"), 10) : null;
    line = [];
    cursor = 0;
    firstMover = null;
    panel.hidden = false;
    show();
    panel.scrollIntoView({ block: "start" });
  }

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!(target instanceof Element)) return;
    var piece = target.closest("#analysis-board [data-move]");
    if (piece) {
      event.preventDefault();
      picker.click(piece.getAttribute("data-move"));
      return;
    }
    switch (target.id) {
      case "analysis-open": open(); break;
      case "analysis-close": byId("analysis").hidden = true; break;
      case "analysis-start": step(0); break;
      case "analysis-back": step(cursor - 1); break;
      case "analysis-forward": step(cursor + 1); break;
      case "analysis-end": step(line.length); break;
      case "analysis-conditional": {
        var form = byId("conditional-form");
        if (!form) return;
        byId("conditional-line").value = target.dataset.line;
        form.requestSubmit(byId("queue-conditional"));
        break;
      }
      default:
    }
  });

  document.addEventListener("change", function (event) {
    if (event.target instanceof Element && event.target.id === "analysis-seat") {
      line = [];
      cursor = 0;
      show();
    }
  });

  // The button lives in the part of the page swapped after each move: show it whenever it is there.
  function reveal() {
    var button = byId("analysis-open");
    if (button) button.hidden = false;
  }
  new MutationObserver(reveal).observe(document.body, { childList: true, subtree: true });
  reveal();
})();
