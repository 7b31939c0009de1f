// Matching board clicks to legal moves, for the game page's move composer (board.js) and its
// conditional-moves panel (conditionals.js): one rule, so that the same clicks pick the same move in both.
// A clicked fragment is what a board target carries in data-move: a cell or junction ("c2"), a tile flip
// ("^c3"), or a whole move.  Clicks are matched against a move's notation, or against its spelling as
// clicked where the engine gives one (`spelled`, by move: Truchet's merge "d4<ws" is clicked on its
// sources c4 and d3 and its target d4, "c4,d3>d4").
window.pbemMoves = (function () {
  "use strict";
  var WORD = /[a-z0-9^]/i;

  // What clicks are matched against for `move`.
  function clicks(move, spelled) {
    return (spelled && Object.prototype.hasOwnProperty.call(spelled, move)) ? spelled[move] : move;
  }

  // Whether `fragment` occurs in `move` at or after `from` as a whole name (so "a1" does not match
  // inside "a12", nor the junction "a3" inside the tile flip "^a3"); returns the index just after it,
  // or -1.
  function find(move, fragment, from) {
    var i = move.indexOf(fragment, from);
    while (i >= 0) {
      var before = i === 0 ? "" : move[i - 1];
      var after = move[i + fragment.length] || "";
      var clean = !(WORD.test(before) && WORD.test(fragment[0])) &&
                  !(WORD.test(after) && WORD.test(fragment[fragment.length - 1]));
      if (clean) return i + fragment.length;
      i = move.indexOf(fragment, i + 1);
    }
    return -1;
  }

  // The moves of `legal` that contain every clicked fragment in click order (a Truchet step-and-merge
  // clicked from its source: e2 then d2 is "b1-e2,d2<es", not a merge onto e2); when none do, in any
  // order (a pair of Box Off tiles can be clicked either way round).
  function candidates(legal, fragments, spelled) {
    var ordered = legal.filter(function (move) {
      var at = 0;
      var text = clicks(move, spelled);
      return fragments.every(function (f) { at = find(text, f, at); return at >= 0; });
    });
    if (ordered.length || fragments.length < 2) return ordered;
    return legal.filter(function (move) {
      var text = clicks(move, spelled);
      return fragments.every(function (f) { return find(text, f, 0) >= 0; });
    });
  }

  // What is left of `move` once each clicked fragment is cut out of it (each where it first occurs as a
  // whole name, in any order), or null when one of them is not in it.  A fragment is cut to a space, so
  // that the names on either side of it do not run together.
  function rest(move, fragments) {
    var left = move;
    for (var k = 0; k < fragments.length; k++) {
      var end = find(left, fragments[k], 0);
      if (end < 0) return null;
      left = left.slice(0, end - fragments[k].length) + " " + left.slice(end);
    }
    return left;
  }

  // Whether the clicks are the whole of `move`: once they are cut out, only its punctuation is left
  // (Truchet's step "c3-b4" from c3 and b4, Box Off's "c1-d1", a cell or a push arrow on its own), not
  // a flip, a junction or a merge's directions that the clicks have not given.
  function exact(move, fragments, spelled) {
    var left = rest(clicks(move, spelled), fragments);
    return left !== null && !WORD.test(left);
  }

  // Whether `move` names no clickable fragment (of `known`) besides the clicked ones: a Truchet split
  // "c3>nne" from a click on c3, whose directions no click can give, but not "^a4 c3>nne".
  function onlyClicked(move, fragments, known, spelled) {
    var left = rest(clicks(move, spelled), fragments);
    return left !== null && !known.some(function (f) { return find(left, f, 0) >= 0; });
  }

  // A picker of one move by clicks on a board's targets or from buttons listing the moves that fit (the
  // conditional builder's and the analysis board's): a click on a target that is a move by itself picks
  // it; clicks that leave one move pick that one; otherwise the moves that fit are listed in the element
  // `listId` (found afresh each time: the page may have redrawn it) when there are few, or counted.
  // `pick(move)` is called with the move picked.
  var LISTED = 40;
  function picker(listId, pick) {
    var legal = [];
    var spelled = {};
    var clicked = [];

    function list() {
      var box = document.getElementById(listId);
      if (!box) return;
      box.innerHTML = "";
      var left = candidates(legal, clicked, spelled);
      if (left.length === 1 && clicked.length) { pick(left[0]); return; }
      var offer = function (move) {
        var b = document.createElement("button");
        b.type = "button";
        b.className = "secondary";
        b.textContent = move;
        b.addEventListener("click", function () { pick(move); });
        box.append(b);
      };
      if (left.length <= LISTED) {
        // The moves the clicks make whole come first (a merge before its flip versions).
        var whole = left.filter(function (move) { return exact(move, clicked, spelled); });
        whole.concat(left.filter(function (move) { return whole.indexOf(move) < 0; })).forEach(offer);
        return;
      }
      // The clicks may be a whole move of their own (Truchet's step "c3-b4", though its longer and flip
      // versions fit them too): it is offered, since no further click would single it out.
      var whole = left.filter(function (move) { return exact(move, clicked, spelled); });
      box.textContent = left.length + " moves: click the board to narrow them down" + (whole.length ? ", or pick: " : ".");
      whole.forEach(offer);
    }

    return {
      // The legal moves to pick from (a new position), with their spellings as clicked: the clicks
      // start again.
      moves: function (moves, spellings) { legal = moves || []; spelled = spellings || {}; clicked = []; list(); },
      // A board target clicked (its data-move).
      click: function (fragment) {
        if (legal.indexOf(fragment) >= 0) { pick(fragment); return; }
        clicked = clicked.indexOf(fragment) >= 0 ? clicked : clicked.concat([fragment]);
        if (!candidates(legal, clicked, spelled).length) clicked = [fragment];
        list();
      }
    };
  }

  return { find: find, candidates: candidates, exact: exact, onlyClicked: onlyClicked, picker: picker };
})();
