/* Draw every [data-chart] element from the figures in #chart-data.
 * The figures are complete plotly JSON built by deepep_calc.report.charts: this file only
 * hands them to plotly.js, it computes nothing. Used by both pages and the HTML report. */
(function () {
  "use strict";
  var CONFIG = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d"] };

  function draw(figures) {
    if (!window.Plotly || !figures) return;
    var nodes = document.querySelectorAll("[data-chart]");
    for (var i = 0; i < nodes.length; i++) {
      var fig = figures[nodes[i].getAttribute("data-chart")];
      if (fig) window.Plotly.react(nodes[i], fig.data, fig.layout, CONFIG);
    }
  }

  function initial() {
    var node = document.getElementById("chart-data");
    if (node) draw(JSON.parse(node.textContent));
  }

  window.deepepCharts = { draw: draw };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", initial);
  else initial();
})();
