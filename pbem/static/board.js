// The game page's script: compose a move by clicking the board, confirm it, send it, and swap in the new
// position without reloading.  Without this script the page still works through its forms.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live) return;
  var notice = document.getElementById("notice");
  var clicked = [];   // the fragments clicked so far, in order
  var legal = [];     // the legal moves of the viewer's seat, from the page
  var spelled = {};   // those the board's clicks spell otherwise, with that spelling (moves.js)
  var picked = null;  // a move picked from the choices listed for the clicks, to be confirmed
  var filled = null;  // the proposed move as put in the Move box, while it is still there
  var MAX_CHOICES = 24;  // moves listed as buttons when no more than this many fit
  var POLL_MS = 15000;
  // Refusals that mean the page is out of date (the server's 409 answers).
  var OUT_OF_DATE = ["stale", "not-your-turn", "over", "conflict"];

  // The legal moves that fit the fragments clicked so far (moves.js says how).
  function candidates(fragments) { return window.pbemMoves.candidates(legal, fragments, spelled); }

  function show(message, isError) {
    notice.textContent = message;
    notice.className = "flash" + (isError ? " error" : "");
    notice.hidden = !message;
  }

  // The move the page proposes for the clicks so far: the one picked from the choices; else the
  // clicks themselves when they are a whole move (Truchet's step "c3-b4" from c3 and b4, though its
  // longer versions and flip versions fit the same clicks and the player may click on for one of
  // them); else the only move that fits.
  function proposal() {
    if (!clicked.length) return null;
    var left = candidates(clicked);
    if (picked && left.indexOf(picked) >= 0) return picked;
    var whole = left.filter(function (move) { return window.pbemMoves.exact(move, clicked, spelled); });
    if (whole.length === 1) return whole[0];
    return left.length === 1 ? left[0] : null;
  }

  // The fragments the board offers to click, for telling which moves need no more clicks.
  function fragmentsOnBoard() {
    var board = document.getElementById("my-board");
    var found = [];
    if (!board) return found;
    board.querySelectorAll("[data-move]").forEach(function (el) {
      var fragment = el.getAttribute("data-move");
      if (found.indexOf(fragment) < 0) found.push(fragment);
    });
    return found;
  }

  // The Move box shows the proposed move, so that the Play button under it plays that move and the
  // player sees its notation; what the player typed there is left alone unless a proposal replaces it.
  function fillMoveBox(move) {
    var field = live.querySelector("#move-text");
    if (!field) return;
    if (move) {
      field.value = move;
      filled = move;
    } else if (filled !== null && field.value === filled) {
      field.value = "";
    }
    if (!move) filled = null;
  }

  function render() {
    var box = document.getElementById("proposal");
    var board = document.getElementById("my-board");
    if (!box || !board) return;
    var left = candidates(clicked);
    var composing = clicked.length > 0;
    board.classList.toggle("composing", composing);
    board.querySelectorAll("[data-move]").forEach(function (el) {
      var fragment = el.getAttribute("data-move");
      var isClicked = clicked.indexOf(fragment) >= 0;
      var useful = !composing || isClicked || candidates(clicked.concat([fragment])).length > 0;
      el.classList.toggle("picked", isClicked);
      // The targets that still fit the clicks so far (a Box Off tile's partners) stand out...
      el.classList.toggle("partner", composing && useful && !isClicked);
      if (!el.closest(".tile")) el.classList.toggle("dim", !useful);
    });
    // ...and pieces drawn as a whole (Box Off's tiles) fade when they are neither picked nor a partner,
    // whether they could be played before or not.
    board.querySelectorAll(".tile").forEach(function (tile) {
      tile.classList.toggle("dim", composing && !tile.querySelector(".picked, .partner"));
    });
    box.innerHTML = "";
    var chosen = proposal();
    fillMoveBox(chosen);
    if (!clicked.length) { box.hidden = true; return; }
    box.hidden = false;
    var line = document.createElement("p");
    var others = left.filter(function (move) { return move !== chosen; });
    var choices = others;
    var more = document.createElement("p");
    more.className = "hint";
    more.id = "more-moves";
    if (chosen) {
      line.append("Play ");
      var code = document.createElement("code");
      code.id = "proposed-move";
      code.textContent = chosen;
      line.append(code, "? ");
      line.append(button("Confirm", "confirm-move", function () { send(chosen); }));
      warningsFor(chosen).forEach(function (text) {
        var warning = document.createElement("p");
        warning.className = "warning";
        warning.setAttribute("role", "alert");
        warning.textContent = text;
        box.append(warning);
      });
      if (others.length > MAX_CHOICES) {
        more.textContent = "Or click on: " + others.length + " other moves fit these clicks.";
        choices = [];
      } else if (others.length) {
        more.textContent = "Or pick another:";
      }
    } else if (left.length <= MAX_CHOICES) {
      line.textContent = "Selected " + clicked.join(" ") + ": " + left.length + " moves fit. Click on, or pick one:";
    } else {
      line.textContent = "Selected " + clicked.join(" ") + ": " + left.length +
        " moves fit; click on to narrow them, or type the move.";
      // Some moves can be finished by no click (a Truchet split's directions): those are offered when
      // they are few.
      var known = fragmentsOnBoard();
      choices = left.filter(function (move) {
        return window.pbemMoves.onlyClicked(move, clicked, known, spelled);
      });
      if (choices.length > MAX_CHOICES) choices = [];
      if (choices.length) more.textContent = "These need no more clicks:";
    }
    line.append(" ", button("Clear", "clear-move", function () { clicked = []; picked = null; render(); }, "secondary"));
    box.append(line);
    if (more.textContent) box.append(more);
    if (choices.length) {
      var list = document.createElement("p");
      list.className = "candidates";
      // A move picked from the list is proposed like one made by clicks: the player confirms it.
      choices.forEach(function (move) {
        list.append(button(move, null, function () { picked = move; render(); }, "secondary"));
      });
      box.append(list);
    }
  }

  // What the board warns about a move (Easy Slider's `done` on an unsolved board is a fumble): the
  // data-warning of every target whose fragment the move contains.
  function warningsFor(move) {
    var board = document.getElementById("my-board");
    var found = [];
    if (!board) return found;
    board.querySelectorAll("[data-move][data-warning]").forEach(function (el) {
      var text = el.getAttribute("data-warning");
      if (window.pbemMoves.find(move, el.getAttribute("data-move"), 0) >= 0 && found.indexOf(text) < 0) found.push(text);
    });
    return found;
  }

  function button(label, id, onClick, style) {
    var b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    if (id) b.id = id;
    if (style) b.className = style;
    b.addEventListener("click", onClick);
    return b;
  }

  function send(move) {
    var form = live.querySelector("form.move-form");
    form.querySelector("[name=move]").value = move;
    post(form, true);
  }

  // `warned`: the player has already seen the move's warnings (in the proposal box).
  // `submitter` is the button that sent the form: a button of its own address (formaction, as a
  // challenge's Decline beside its Accept) sends the form there, with its own name and value (the
  // draw answer) and after its own confirmation (Resign), as the form does without this script.
  function post(form, warned, submitter) {
    var action = submitter && submitter.hasAttribute("formaction") ? submitter.formAction : form.action;
    var confirmText = (submitter && submitter.getAttribute("data-confirm")) || form.getAttribute("data-confirm");
    if (form.classList.contains("move-form") && !warned) {
      var typed = form.querySelector("[name=move]").value.trim().toLowerCase();
      confirmText = warningsFor(typed).join(" ") + (warningsFor(typed).length ? " Send it anyway?" : "");
    }
    if (confirmText && !window.confirm(confirmText)) return;
    var buttons = form.querySelectorAll("button");
    buttons.forEach(function (b) { b.disabled = true; });
    var body = new FormData(form);
    if (submitter && submitter.name) body.append(submitter.name, submitter.value);
    fetch(action, {
      method: "POST",
      body: body,
      headers: { "Accept": "application/json" },
      credentials: "same-origin"
    }).then(function (response) {
      return response.json();
    }).then(function (answer) {
      if (answer.ok) {
        clicked = [];
        // Messages of the page's first load (e.g. "the game has started") are out of date now.
        document.querySelectorAll("main > .flash:not(#notice)").forEach(function (el) { el.remove(); });
        show(answer.message, false);
        return refresh();
      }
      if (OUT_OF_DATE.indexOf(answer.code) >= 0) {
        // The game moved on since the page was drawn: show the new position at once, with the refusal,
        // and keep what the player typed.
        var typed = form.classList.contains("move-form") ? keptInput() : null;
        return refresh().then(function () { refused(answer.message, typed); });
      }
      refused(answer.message, form.classList.contains("move-form") ? {} : null);
      buttons.forEach(function (b) { b.disabled = false; });
    }).catch(function () {
      show("The server did not answer; nothing was sent. Try again.", true);
      buttons.forEach(function (b) { b.disabled = false; });
    });
  }

  // What the player typed in the move form, to put back after the page is redrawn.
  function keptInput() {
    var kept = {};
    ["#move-text", "#comment"].forEach(function (id) {
      var field = live.querySelector(id);
      if (field) kept[id] = field.value;
    });
    return kept;
  }

  // A refusal: next to the move form when the answer was to a move and the form is (still) there,
  // otherwise in the page's notice.  `typed` (from keptInput) is put back into the form.
  function refused(message, typed) {
    var error = live.querySelector("#move-error");
    if (typed && error) {
      Object.keys(typed).forEach(function (id) {
        var field = live.querySelector(id);
        if (field) field.value = typed[id];
      });
      error.textContent = message;
      error.hidden = false;
      // As after a refused move without the script, the legal moves are shown (when they are listed).
      var list = live.querySelector("#legal-list");
      if (list) list.open = true;
    } else {
      show(message, true);
    }
  }

  function refresh() {
    return fetch(live.getAttribute("data-live-url"), { credentials: "same-origin" })
      .then(function (response) { return response.text(); })
      .then(function (html) { live.innerHTML = html; setUp(); });
  }

  function version() {
    var inner = live.querySelector(".live");
    return inner ? inner.getAttribute("data-version") : null;
  }

  // Someone else may move meanwhile: look now and then, but never disturb a move being composed nor
  // wipe a comment being written (the swap would redraw its box empty).
  function poll() {
    var busy = clicked.length || Array.prototype.some.call(
      live.querySelectorAll("#move-text, textarea"),
      function (field) { return field.value || document.activeElement === field; });
    if (document.hidden || busy) return;
    fetch(live.getAttribute("data-version-url"), { credentials: "same-origin" })
      .then(function (response) { return response.json(); })
      .then(function (answer) { if (String(answer.version) !== version()) refresh(); })
      .catch(function () {});
  }

  // The move list shows its latest entries (the replay's script shows the position replayed instead):
  // a long game's list would otherwise open on its first moves.
  function followMoves() {
    var list = live.querySelector("ol#moves");
    if (list && !list.querySelector("li.current")) list.scrollTop = list.scrollHeight;
  }

  function setUp() {
    followMoves();
    var data = live.querySelector("#legal-moves");
    legal = data ? JSON.parse(data.textContent) : [];
    var spellings = live.querySelector("#move-spellings");
    spelled = spellings ? JSON.parse(spellings.textContent) : {};
    clicked = [];
    picked = null;
    filled = null;
    var board = document.getElementById("my-board");
    if (board) {
      board.querySelectorAll("[data-move]").forEach(function (el) {
        el.addEventListener("click", function (event) {
          event.preventDefault();
          var fragment = el.getAttribute("data-move");
          var next = clicked.indexOf(fragment) >= 0 ? clicked.filter(function (f) { return f !== fragment; })
                                                    : clicked.concat([fragment]);
          // A click that fits no legal move with the earlier clicks starts a new move.
          if (next.length && !candidates(next).length) next = [fragment];
          clicked = next;
          picked = null;
          render();
        });
      });
    }
    live.querySelectorAll("form.move-form, form.js-post").forEach(function (form) {
      form.addEventListener("submit", function (event) {
        event.preventDefault();
        post(form, false, event.submitter);
      });
    });
    render();
  }

  setUp();
  window.setInterval(poll, POLL_MS);
})();
