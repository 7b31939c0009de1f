// The replay on the game page: step through the record with the buttons, the arrow keys (and Home/End)
// or by clicking a move in the list, without reloading; the address keeps ?move=N so a position can be
// linked.  Without this script every button and move is a plain link to that position.
(function () {
  "use strict";
  // The number of the last position asked for (null before any): older answers arriving late are
  // dropped, and the next step goes on from it, so that keys pressed faster than the positions arrive
  // each count.
  var wanted = null;

  function replay() { return document.getElementById("replay"); }

  function numberIn(href) {
    var match = /[?&]move=(\d+)/.exec(href || "");
    return match ? parseInt(match[1], 10) : null;
  }

  function link(box, n) {
    return box.dataset.pageUrl + "?move=" + n;
  }

  function mark(box, at) {
    var last = parseInt(box.dataset.last, 10);
    box.dataset.at = String(at);
    var targets = {"replay-first": 0, "replay-prev": Math.max(at - 1, 0),
                   "replay-next": Math.min(at + 1, last), "replay-last": last};
    Object.keys(targets).forEach(function (id) {
      var a = document.getElementById(id);
      if (!a) return;
      a.href = link(box, targets[id]);
      var idle = targets[id] === at;
      a.setAttribute("aria-disabled", idle ? "true" : "false");
    });
    document.querySelectorAll("#moves li[data-move-number]").forEach(function (li) {
      var current = parseInt(li.dataset.moveNumber, 10) === at;
      li.classList.toggle("current", current);
      if (current && li.scrollIntoView) li.scrollIntoView({block: "nearest"});
    });
  }

  function go(n) {
    var box = replay();
    if (!box) return;
    var last = parseInt(box.dataset.last, 10);
    n = Math.max(0, Math.min(n, last));
    wanted = n;
    var url = box.dataset.positionUrl.replace(/\/0$/, "/" + n);
    fetch(url, {headers: {"Accept": "text/html"}, credentials: "same-origin"})
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (html) {
        if (n !== wanted) return;
        document.getElementById("replay-position").innerHTML = html;
        mark(box, n);
        history.replaceState(null, "", link(box, n));
      })
      .catch(function () { window.location.href = link(box, n); });
  }

  function at() {
    var box = replay();
    return box ? parseInt(box.dataset.at, 10) : null;
  }

  // Where the next step starts: the position last asked for, or the one shown.
  function here() {
    return wanted !== null && replay() ? wanted : at();
  }

  document.addEventListener("click", function (event) {
    var a = event.target.closest && event.target.closest(
      "#replay-first, #replay-prev, #replay-next, #replay-last, #moves a.to-move");
    if (!a || !replay() || event.ctrlKey || event.metaKey || event.shiftKey) return;
    var n = numberIn(a.getAttribute("href"));
    if (n === null) return;
    // Previous and Next step from the position last asked for: their links still name the one shown.
    if (a.id === "replay-prev") n = here() - 1;
    if (a.id === "replay-next") n = here() + 1;
    event.preventDefault();
    go(n);
  });

  document.addEventListener("keydown", function (event) {
    var from = here();
    if (from === null || event.altKey || event.ctrlKey || event.metaKey) return;
    var tag = (event.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select" || event.target.isContentEditable) return;
    var last = parseInt(replay().dataset.last, 10);
    var to = {ArrowLeft: from - 1, ArrowRight: from + 1, Home: 0, End: last}[event.key];
    if (to === undefined) return;
    event.preventDefault();
    go(to);
  });

  document.addEventListener("DOMContentLoaded", function () {
    var box = replay();
    if (box) mark(box, parseInt(box.dataset.at, 10));
  });
})();
