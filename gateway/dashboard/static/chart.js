// Draws a chat's context size over time from the page's JSON block (no inline script: the CSP forbids it).
(function () {
  "use strict";
  function draw() {
    var block = document.getElementById("chart-data");
    var target = document.getElementById("chart");
    if (!block || !target || typeof uPlot === "undefined") return;
    var d = JSON.parse(block.textContent);
    var opts = {
      width: Math.max(320, target.clientWidth || 800),
      height: 300,
      scales: { x: { time: true } },
      series: [
        {},
        { label: "context", stroke: "#2060c0", width: 2, spanGaps: true },
        { label: "compaction", stroke: "#c03030", fill: "#c03030", paths: function () { return null; },
          points: { show: true, size: 9, fill: "#c03030" } },
        { label: "compaction threshold", stroke: "#888", dash: [6, 4] },
        { label: "hygiene", stroke: "#c08020", dash: [2, 4] },
      ],
      axes: [{}, { size: 70 }],
    };
    new uPlot(opts, [d.x, d.context, d.compactions, d.compressor, d.hygiene], target);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw);
  else draw();
})();
