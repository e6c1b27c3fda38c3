/* The plan's frontier chart and its links to the calculator's cards.
 *
 * The figure arrives complete (plotly JSON built by deepep_calc.report.plan_chart); each
 * point's customdata is the calculator's query string for its configuration. This file only
 * draws the figure and opens a clicked point's card: on the served page at this server, in
 * the self-contained file at the address typed in #serve-url. It computes nothing.
 */
(function () {
  "use strict";
  var chart = document.getElementById("plan-chart");
  var figure = document.getElementById("plan-figure");
  var base = document.getElementById("serve-url");

  function cardBase() { return base ? base.value.trim().replace(/\/+$/, "") : ""; }
  function cardUrl(query) { return cardBase() + "/?" + query; }
  function relink() {
    document.querySelectorAll("a[data-card]").forEach(function (a) { a.href = cardUrl(a.getAttribute("data-card")); });
  }

  if (chart && figure && window.Plotly) {
    var fig = JSON.parse(figure.textContent);
    window.Plotly.newPlot(chart, fig.data, fig.layout, { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d"] })
      .then(function () {
        chart.on("plotly_click", function (ev) {
          var q = ev && ev.points && ev.points.length ? ev.points[0].customdata : null;
          if (typeof q === "string") window.open(cardUrl(q), "_blank", "noopener");
        });
        document.body.setAttribute("data-plan-chart", "1");
      });
  }
  // each run block's copy button copies that block's text: the command, no fences or captions
  document.querySelectorAll("button.copy[data-copy]").forEach(function (btn) {
    btn.addEventListener("click", function () {
      var pre = document.getElementById(btn.getAttribute("data-copy"));
      if (!pre) return;
      var text = pre.textContent;
      var done = function () { btn.classList.add("done"); btn.textContent = "copied"; };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(done, function () { select(pre); });
      } else { select(pre); }
    });
  });
  function select(el) {
    var range = document.createRange(); range.selectNodeContents(el);
    var sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range);
  }
  if (base) { base.addEventListener("input", relink); relink(); }
  document.body.setAttribute("data-plan-ready", "1");
})();
