// The console's graph: a neighbourhood drawn with cytoscape; a fact clicked (or chosen in the
// list with the keyboard) is expanded with its own neighbourhood.
document.addEventListener("DOMContentLoaded", function () {
  var box = document.getElementById("graph");
  if (!box || !window.cytoscape) return;
  var colours = { semantic: "#1f5fbf", temporal: "#9a6400", entity: "#1e7b34", causes: "#b3261e",
                  caused_by: "#b3261e", enables: "#7b1fa2", prevents: "#7b1fa2", mentions: "#888" };
  var cy = cytoscape({
    container: box,
    style: [
      { selector: "node", style: { label: "data(short)", "font-size": 7, "min-zoomed-font-size": 6, "text-wrap": "wrap",
                                   "text-max-width": 90, width: 12, height: 12, "background-color": "#5b6570" } },
      { selector: "node[kind = 'entity']", style: { "background-color": "#1e7b34", shape: "diamond", width: 22, height: 22 } },
      { selector: "node.centre", style: { "background-color": "#f0a500", width: 16, height: 16 } },
      { selector: "edge", style: { width: 1.5, "line-color": "data(colour)", "curve-style": "haystack", opacity: 0.7 } },
    ],
    maxZoom: 1.8,  // a small neighbourhood is not blown up to fill the box
    wheelSensitivity: 0.3,
  });
  var list = document.getElementById("graph-list");
  var expanded = {};
  function add(data) {
    data.nodes.forEach(function (n) {
      if (cy.getElementById(n.id).length) return;
      var short = n.label.length > 40 ? n.label.slice(0, 37) + "…" : n.label;
      cy.add({ group: "nodes", data: { id: n.id, label: n.label, short: short, kind: n.kind } });
      if (n.kind !== "entity") {
        var li = document.createElement("li");
        var b = document.createElement("button");
        b.className = "link"; b.textContent = n.label; b.title = "expand";
        b.addEventListener("click", function () { expand(n.id); });
        li.appendChild(b); list.appendChild(li);
      }
    });
    data.edges.forEach(function (e) {
      if (cy.getElementById(e.id).length) return;
      cy.add({ group: "edges", data: { id: e.id, source: e.source, target: e.target, colour: colours[e.type] || "#888" } });
    });
    (data.centres || []).forEach(function (c) { cy.getElementById(c).addClass("centre"); });
    cy.layout({
      // Rings: the entity, then the facts asked for, then their neighbours; readable at any size.
      name: "concentric", animate: false, padding: 30, minNodeSpacing: 36,
      concentric: function (n) { return n.data("kind") === "entity" ? 3 : n.hasClass("centre") ? 2 : 1; },
      levelWidth: function () { return 1; },
    }).run();
  }
  function load(query) {
    return fetch(box.dataset.src + "?" + query, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : { nodes: [], edges: [] }; }).then(add);
  }
  function expand(id) {
    if (expanded[id] || id.indexOf("e:") === 0) return;
    expanded[id] = true;
    load("fact=" + encodeURIComponent(id));
  }
  cy.on("tap", "node", function (evt) { expand(evt.target.id()); });
  if (box.dataset.fact) { expanded[box.dataset.fact] = true; load("fact=" + encodeURIComponent(box.dataset.fact)); }
  else if (box.dataset.entity) load("entity=" + encodeURIComponent(box.dataset.entity));
});
