// ccmetrics report: the viewer of a case, drawn on 2D canvases by this file alone (no library, no network).
// Its data (ccmetrics.report.viewer): per case a volume <script type="application/json" id="ANCHOR-viewer-volume">
// (the scan: base64 of zlib of uint8 voxels i, j, k in C order, or none; the grid: "starts" of each displayed voxel's
// block of GT voxels, "stops", "spacing_mm", the GT's "affine"), per case and class a label map
// <script id="ANCHOR-viewer-data"> (component entries, 0 for none; "components": kind, label, outcome, voxel, id),
// both read and inflated (DecompressionStream('deflate')) only when the viewer is opened. For large data sets the
// data element holds {"src": "report_files/ANCHOR.js"} instead (ccmetrics.report.viewer.place_data): that script,
// injected only when the viewer is opened (a <script src> loads from a file:// page, a fetch does not), puts the JSON
// texts into window.ccmetricsViewerFiles by id. ccmetricsViewer.stats counts the case data parsed and the scripts
// loaded. Split lesions (two or more predictions overlap it) and merged ones (one prediction overlaps two or more
// lesions: the prediction and those lesions) are hatched over their outcome's colour.
// Views: MIP coronal (over j: i right, k up) and sagittal (over i: j right, k up); planes axial (k: i right, j up),
// coronal (j) and sagittal (i) through the cursor, which is a voxel of the GT's grid.
(function () {
  "use strict";
  var legendNode = document.getElementById("viewer-legend");
  if (!legendNode) { return; }
  var LEGEND = JSON.parse(legendNode.textContent);
  var COLOUR = {}, PRIORITY = {}, NAME = {};
  LEGEND.forEach(function (o) {
    COLOUR[o.code] = [parseInt(o.colour.slice(1, 3), 16), parseInt(o.colour.slice(3, 5), 16),
      parseInt(o.colour.slice(5, 7), 16)];
    PRIORITY[o.code] = o.priority;
    NAME[o.code] = o.name;
  });
  var AXES = "ijk";
  var VIEWS = [  // h: the axis to the right, v: the axis up, fixed: the plane's axis (or the projection's)
    { name: "mip-coronal", title: "MIP, coronal", h: 0, v: 2, fixed: 1, mip: true },
    { name: "mip-sagittal", title: "MIP, sagittal", h: 1, v: 2, fixed: 0, mip: true },
    { name: "axial", title: "axial", h: 0, v: 1, fixed: 2, mip: false },
    { name: "coronal", title: "coronal", h: 0, v: 2, fixed: 1, mip: false },
    { name: "sagittal", title: "sagittal", h: 1, v: 2, fixed: 0, mip: false }
  ];
  var BOX_PX = 240;  // the longest side of the volume, on screen
  var STATS = { parsed: 0, loaded: 0 };  // case data parsed (JSON.parse of a volume or a label map), scripts loaded
  var SPLIT = 1, MERGED = 2;  // the hatching of a component: "/" split, "\\" merged
  var HATCH = [
    { bit: SPLIT, name: "split", css: "-45deg", text: "split: a lesion two or more predictions overlap" },
    { bit: MERGED, name: "merged", css: "45deg", text: "merged: a prediction overlapping two or more lesions, and these" }
  ];

  function parse(text) { STATS.parsed += 1; return JSON.parse(text); }

  // a script beside the page (its data), loaded once: resolves when it has run
  var scripts = {};
  function loadScript(src) {
    if (!scripts[src]) {
      scripts[src] = new Promise(function (resolve, reject) {
        var node = document.createElement("script");
        node.src = src;
        node.onload = function () { STATS.loaded += 1; resolve(); };
        node.onerror = function () {
          delete scripts[src];
          reject(new Error("the viewer's data " + src + " could not be read: keep the folder " +
            src.split("/")[0] + " beside the page"));
        };
        document.head.appendChild(node);
      });
    }
    return scripts[src];
  }

  function inflate(text, wide) {
    var binary = atob(text), bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) { bytes[i] = binary.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).arrayBuffer().then(function (buffer) {
      return wide ? new Uint16Array(buffer) : new Uint8Array(buffer);
    });
  }

  // a coordinate in mm as the tables write it: 0.1 mm, a true minus sign, never -0.0
  function mm(value) {
    var text = value.toFixed(1);
    if (text === "-0.0") { return "0.0"; }
    return text.replace("-", "\u2212");
  }

  function Viewer(box) {
    this.box = box;
    this.anchor = box.getAttribute("data-viewer");
    this.root = box.querySelector(".viewer");
    this.ready = null;
    this.active = 2;  // the axis the keys move: the axial plane's k first
    this.overlay = true;
  }

  // the case's data: {data, volume}, from the page or from its script beside the page
  Viewer.prototype.source = function () {
    var anchor = this.anchor, stub = JSON.parse(document.getElementById(anchor + "-viewer-data").textContent);
    if (!stub.src) {
      STATS.parsed += 1;  // the stub was the data
      return Promise.resolve({ data: stub, volume: parse(document.getElementById(stub.volume).textContent) });
    }
    return loadScript(stub.src).then(function () {
      var files = window.ccmetricsViewerFiles || {}, data = parse(files[anchor]);
      return { data: data, volume: parse(files[data.volume]) };
    });
  };

  Viewer.prototype.load = function () {
    if (this.ready) { return this.ready; }
    var self = this;
    this.ready = this.source().then(function (source) {
      var data = source.data, volume = source.volume;
      self.data = data;
      self.volume = volume;
      var jobs = [inflate(data.labels, data.dtype === "uint16")];
      if (volume.scan) { jobs.push(inflate(volume.scan, false)); }
      return Promise.all(jobs);
    }).then(function (arrays) {
      self.labels = arrays[0];
      self.scan = arrays.length > 1 ? arrays[1] : null;
      self.setup();
      return self;
    }, function (error) {
      self.ready = null;  // a later opening tries again
      self.root.textContent = String(error.message || error);
      self.root.setAttribute("data-error", "true");
      throw error;
    });
    return this.ready;
  };

  Viewer.prototype.index = function (i, j, k) {
    var n = this.volume.shape;
    return (i * n[1] + j) * n[2] + k;
  };

  // the displayed voxel (block) holding GT voxel v on an axis
  Viewer.prototype.block = function (axis, v) {
    var starts = this.volume.starts[axis], lo = 0, hi = starts.length - 1;
    if (v <= starts[0]) { return 0; }
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= v) { lo = mid; } else { hi = mid - 1; }
    }
    return lo;
  };

  // the GT voxel a displayed voxel stands for on an axis: the middle of its block
  Viewer.prototype.voxelOf = function (axis, d) {
    var starts = this.volume.starts[axis];
    d = Math.max(0, Math.min(starts.length - 1, d));
    var end = d + 1 < starts.length ? starts[d + 1] : this.volume.stops[axis];
    return starts[d] + Math.floor((end - starts[d] - 1) / 2);
  };

  Viewer.prototype.setup = function () {
    var self = this, n = this.volume.shape, comps = this.data.components;
    this.outcome = new Uint8Array(comps.length + 1);
    this.priority = new Uint8Array(comps.length + 1);
    this.hatch = new Uint8Array(comps.length + 1);
    comps.forEach(function (c, e) {
      self.outcome[e + 1] = c.outcome;
      self.priority[e + 1] = PRIORITY[c.outcome];
      self.hatch[e + 1] = ((c.n_pred || 0) >= 2 ? SPLIT : 0) | ((c.n_gt || 0) >= 2 || (c.merged || 0) >= 2 ? MERGED : 0);
    });
    this.mips = {};
    this.mips[1] = this.project(1);
    this.mips[0] = this.project(0);
    var sp = this.volume.spacing_mm;
    var extent = Math.max(n[0] * sp[0], n[1] * sp[1], n[2] * sp[2]);
    this.pxPerMm = BOX_PX / extent;
    this.root.innerHTML = "";
    var bar = el("div", "viewer-bar");
    var toggle = el("label", "viewer-toggle");
    this.overlayBox = el("input");
    this.overlayBox.type = "checkbox";
    this.overlayBox.checked = true;
    this.overlayBox.className = "viewer-overlay";
    toggle.appendChild(this.overlayBox);
    toggle.appendChild(document.createTextNode(" outcomes"));
    bar.appendChild(toggle);
    LEGEND.forEach(function (o) {
      var key = el("span", "viewer-key");
      var swatch = el("span", "swatch");
      swatch.style.background = o.colour;
      key.appendChild(swatch);
      key.appendChild(document.createTextNode(o.text));
      bar.appendChild(key);
    });
    HATCH.forEach(function (o) {
      var key = el("span", "viewer-key viewer-hatch-key");
      key.setAttribute("data-hatch", o.name);
      var swatch = el("span", "swatch");
      swatch.style.background = "repeating-linear-gradient(" + o.css + ", #000 0 2px, #bbb 2px 5px)";
      key.appendChild(swatch);
      key.appendChild(document.createTextNode(o.text));
      bar.appendChild(key);
    });
    if (this.volume.window) { bar.appendChild(el("span", "viewer-window", this.volume.channel + ": " + this.volume.window)); }
    this.root.appendChild(bar);
    this.label = el("output", "viewer-cursor");
    this.root.appendChild(this.label);
    var views = el("div", "viewer-views"), mips = el("div", "viewer-group"), planes = el("div", "viewer-group");
    views.appendChild(mips);
    views.appendChild(planes);
    this.views = VIEWS.map(function (view) {
      var figure = el("figure", "viewer-view");
      var canvas = el("canvas");
      canvas.setAttribute("data-view", view.name);
      var w = n[view.h] * sp[view.h] * self.pxPerMm, h = n[view.v] * sp[view.v] * self.pxPerMm;
      canvas.width = Math.max(1, Math.round(w));
      canvas.height = Math.max(1, Math.round(h));
      figure.appendChild(canvas);
      var caption = el("figcaption", null, view.title);
      figure.appendChild(caption);
      var slider = null;
      if (!view.mip) {
        slider = el("input");
        slider.type = "range";
        slider.min = 0;
        slider.max = n[view.fixed] - 1;
        slider.setAttribute("data-axis", AXES[view.fixed]);
        slider.setAttribute("aria-label", view.title + " plane, " + AXES[view.fixed]);
        slider.addEventListener("input", function () { self.moveTo(view.fixed, Number(slider.value)); });
        figure.appendChild(slider);
        canvas.addEventListener("wheel", function (event) {
          event.preventDefault();
          self.active = view.fixed;
          self.step(view.fixed, event.deltaY < 0 ? 1 : -1);
        }, { passive: false });
        canvas.addEventListener("mouseenter", function () { self.active = view.fixed; });
      }
      canvas.addEventListener("click", function (event) { self.clicked(view, canvas, event); });
      (view.mip ? mips : planes).appendChild(figure);
      var off = document.createElement("canvas");
      off.width = n[view.h];
      off.height = n[view.v];
      var marks = document.createElement("canvas");  // where the hatched components lie, per kind
      marks.width = n[view.h];
      marks.height = n[view.v];
      return { view: view, canvas: canvas, slider: slider, caption: caption, off: off, marks: marks };
    });
    this.root.appendChild(views);
    this.root.appendChild(el("p", "viewer-help muted", "Click a lesion in the tables or on a MIP to go to it; " +
      "click a plane to move the cursor; the mouse wheel over a plane, its slider, or the arrow keys " +
      "(Page Up/Down: 10) move the planes."));
    this.overlayBox.addEventListener("change", function () { self.overlay = self.overlayBox.checked; self.draw(); });
    this.root.addEventListener("keydown", function (event) {
      var steps = { ArrowUp: 1, ArrowRight: 1, ArrowDown: -1, ArrowLeft: -1, PageUp: 10, PageDown: -10 };
      if (!(event.key in steps)) { return; }
      event.preventDefault();
      self.step(self.active, steps[event.key]);
    });
    var first = comps.length ? comps[0].voxel : null;
    this.cursor = first ? first.slice() : [0, 1, 2].map(function (a) { return self.voxelOf(a, n[a] >> 1); });
    this.draw();
  };

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  // the MIP over an axis (0: sagittal, 1: coronal): the scan's maximum and, per ray, the component of the highest
  // priority (missed, false positive, found, true-positive prediction), with the depth of the scan's maximum
  Viewer.prototype.project = function (axis) {
    var n = this.volume.shape, h = axis === 0 ? 1 : 0, nh = n[h], nk = n[2], depth = n[axis];
    var grey = new Uint8Array(nh * nk), label = new Uint32Array(nh * nk), argmax = new Uint16Array(nh * nk);
    var scan = this.scan, labels = this.labels, priority = this.priority, ijk = [0, 0, 0];
    for (var a = 0; a < nh; a++) {
      for (var d = 0; d < depth; d++) {
        ijk[h] = a;
        ijk[axis] = d;
        var base = (ijk[0] * n[1] + ijk[1]) * nk;
        for (var k = 0; k < nk; k++) {
          var at = a * nk + k, e = labels[base + k];
          if (scan && scan[base + k] > grey[at]) { grey[at] = scan[base + k]; argmax[at] = d; }
          if (e && (!label[at] || priority[e] > priority[label[at]])) { label[at] = e; }
        }
      }
    }
    return { grey: grey, label: label, argmax: argmax };
  };

  Viewer.prototype.moveTo = function (axis, d) {
    this.cursor[axis] = this.voxelOf(axis, d);
    this.draw();
  };

  Viewer.prototype.step = function (axis, by) {
    this.moveTo(axis, this.block(axis, this.cursor[axis]) + by);
  };

  Viewer.prototype.goTo = function (id) {
    var found = null;
    this.data.components.forEach(function (c) { if (c.id === id) { found = c; } });
    if (!found) { return false; }
    this.cursor = found.voxel.slice();
    this.draw();
    return true;
  };

  Viewer.prototype.clicked = function (view, canvas, event) {
    var n = this.volume.shape, rect = canvas.getBoundingClientRect();
    var dh = Math.floor((event.clientX - rect.left) / rect.width * n[view.h]);
    var dv = n[view.v] - 1 - Math.floor((event.clientY - rect.top) / rect.height * n[view.v]);
    dh = Math.max(0, Math.min(n[view.h] - 1, dh));
    dv = Math.max(0, Math.min(n[view.v] - 1, dv));
    if (view.mip) {
      var mip = this.mips[view.fixed], at = dh * n[2] + dv, e = mip.label[at];
      if (e) {
        this.cursor = this.data.components[e - 1].voxel.slice();
        this.draw();
        return;
      }
      if (this.scan) { this.cursor[view.fixed] = this.voxelOf(view.fixed, mip.argmax[at]); }
    } else {
      this.active = view.fixed;
    }
    this.cursor[view.h] = this.voxelOf(view.h, dh);
    this.cursor[view.v] = this.voxelOf(view.v, dv);
    this.draw();
  };

  Viewer.prototype.draw = function () {
    var self = this, n = this.volume.shape, d = [0, 1, 2].map(function (a) { return self.block(a, self.cursor[a]); });
    this.views.forEach(function (item) { self.drawView(item, d); });
    // the label: the GT voxel, its RAS mm (the GT's affine), what lies there
    var A = this.volume.affine, v = this.cursor, ras = [0, 1, 2].map(function (r) {
      return A[r][0] * v[0] + A[r][1] * v[1] + A[r][2] * v[2] + A[r][3];
    });
    var e = this.labels[this.index(d[0], d[1], d[2])], what = "no lesion or prediction";
    var comp = e ? this.data.components[e - 1] : null;
    if (comp) {
      what = (comp.kind === "lesion" ? "lesion " : "prediction ") + comp.label + ", " + NAME[comp.outcome];
      if ((comp.n_pred || 0) >= 2) { what += ", split (" + comp.n_pred + " predictions)"; }
      if ((comp.n_gt || 0) >= 2) { what += ", merged (covers " + comp.n_gt + " lesions)"; }
      if ((comp.merged || 0) >= 2) { what += ", merged (one prediction covers " + comp.merged + " lesions)"; }
    }
    this.label.setAttribute("data-voxel", v.join(" "));
    this.label.setAttribute("data-ras", ras.join(" "));
    this.label.setAttribute("data-component", comp && comp.id ? comp.id : "");
    this.label.setAttribute("data-outcome", comp ? NAME[comp.outcome] : "");
    this.label.setAttribute("data-hatch", comp ? HATCH.filter(function (o) {
      return self.hatch[e] & o.bit;
    }).map(function (o) { return o.name; }).join(" ") : "");
    this.label.textContent = "voxel i " + v[0] + ", j " + v[1] + ", k " + v[2] + " (ITK-SNAP " +
      (v[0] + 1) + ", " + (v[1] + 1) + ", " + (v[2] + 1) + ") \u00b7 x " + mm(ras[0]) + ", y " + mm(ras[1]) +
      ", z " + mm(ras[2]) + " mm (RAS) \u00b7 " + what;
    this.views.forEach(function (item) {
      if (item.slider) {
        item.slider.value = d[item.view.fixed];
        item.caption.textContent = item.view.title + " " + AXES[item.view.fixed] + " = " + v[item.view.fixed];
      }
    });
  };

  Viewer.prototype.drawView = function (item, d) {
    var view = item.view, n = this.volume.shape, nh = n[view.h], nv = n[view.v];
    var context = item.off.getContext("2d"), image = context.createImageData(nh, nv), px = image.data;
    var mip = view.mip ? this.mips[view.fixed] : null, ijk = [0, 0, 0], alpha = this.scan ? 0.6 : 1.0;
    var markContext = item.marks.getContext("2d"), markImage = markContext.createImageData(nh, nv);
    var mark = markImage.data, hatched = 0;
    ijk[view.fixed] = d[view.fixed];
    for (var a = 0; a < nh; a++) {
      for (var b = 0; b < nv; b++) {
        var grey, e;
        if (mip) {
          grey = mip.grey[a * n[2] + b];
          e = mip.label[a * n[2] + b];
        } else {
          ijk[view.h] = a;
          ijk[view.v] = b;
          var at = this.index(ijk[0], ijk[1], ijk[2]);
          grey = this.scan ? this.scan[at] : 0;
          e = this.labels[at];
        }
        var p = ((nv - 1 - b) * nh + a) * 4, r = grey, g = grey, bl = grey;
        if (this.overlay && e) {
          var c = COLOUR[this.outcome[e]];
          r = grey * (1 - alpha) + c[0] * alpha;
          g = grey * (1 - alpha) + c[1] * alpha;
          bl = grey * (1 - alpha) + c[2] * alpha;
        }
        px[p] = r;
        px[p + 1] = g;
        px[p + 2] = bl;
        px[p + 3] = 255;
        if (this.overlay && e && this.hatch[e]) {  // red: split, green: merged (a mask, never drawn as such)
          mark[p] = this.hatch[e] & SPLIT ? 255 : 0;
          mark[p + 1] = this.hatch[e] & MERGED ? 255 : 0;
          mark[p + 3] = 255;
          hatched += 1;
        }
      }
    }
    context.putImageData(image, 0, 0);
    var canvas = item.canvas, out = canvas.getContext("2d"), W = canvas.width, H = canvas.height;
    out.imageSmoothingEnabled = false;
    out.drawImage(item.off, 0, 0, W, H);
    if (hatched) {
      markContext.putImageData(markImage, 0, 0);
      this.drawHatch(item, out, W, H);
    }
    // the cursor: two lines with a gap around its voxel
    var x = (d[view.h] + 0.5) * W / nh, y = H - (d[view.v] + 0.5) * H / nv, gap = 6;
    out.strokeStyle = "rgba(255, 255, 0, 0.75)";
    out.lineWidth = 1;
    out.beginPath();
    out.moveTo(0, Math.round(y) + 0.5); out.lineTo(x - gap, Math.round(y) + 0.5);
    out.moveTo(x + gap, Math.round(y) + 0.5); out.lineTo(W, Math.round(y) + 0.5);
    out.moveTo(Math.round(x) + 0.5, 0); out.lineTo(Math.round(x) + 0.5, y - gap);
    out.moveTo(Math.round(x) + 0.5, y + gap); out.lineTo(Math.round(x) + 0.5, H);
    out.stroke();
  };

  // the hatching over the split ("/") and merged ("\\") components: dark stripes where the mask (scaled to the
  // canvas, red: split, green: merged) has its channel, so that they read without the colours
  Viewer.prototype.drawHatch = function (item, out, W, H) {
    var layer = document.createElement("canvas");
    layer.width = W;
    layer.height = H;
    var context = layer.getContext("2d");
    context.imageSmoothingEnabled = false;
    context.drawImage(item.marks, 0, 0, W, H);
    var cut = context.getImageData(0, 0, W, H), px = cut.data;
    for (var p = 0; p < px.length; p += 4) {
      var x = (p >> 2) % W, y = Math.floor((p >> 2) / W), opaque = px[p + 3] > 127;
      var on = (opaque && px[p] > 127 && (x + y) % 6 < 2) || (opaque && px[p + 1] > 127 && (x + H - y) % 6 < 2);
      px[p] = px[p + 1] = px[p + 2] = 0;
      px[p + 3] = on ? 170 : 0;
    }
    context.putImageData(cut, 0, 0);
    out.drawImage(layer, 0, 0);
  };

  // ------------------------------------------------------------ wiring: open on demand, go to a lesion
  var viewers = {};
  function viewerOf(box) {
    var anchor = box.getAttribute("data-viewer");
    if (!viewers[anchor]) { viewers[anchor] = new Viewer(box); }
    return viewers[anchor];
  }

  document.querySelectorAll("details.viewer-box").forEach(function (box) {
    box.addEventListener("toggle", function () { if (box.open) { viewerOf(box).load(); } });
  });

  // a row of a lesion or false positive (by its id): open its case's viewer and put the cursor on it
  function goToRow(id) {
    var row = id ? document.getElementById(id) : null;
    var section = row ? row.closest("details.case") : null;
    var box = section ? section.querySelector("details.viewer-box") : null;
    if (!box) { return; }
    section.open = true;
    box.open = true;
    viewerOf(box).load().then(function (v) { v.goTo(id); });
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest("a[href^='#']");
    if (link) {
      var raw = link.getAttribute("href").slice(1), id;
      try { id = decodeURIComponent(raw); } catch (e) { id = raw; }
      goToRow(id);
      return;
    }
    var row = event.target.closest("details.case table.lesions tr[id]");
    if (row) { goToRow(row.id); }
  });

  // a link from elsewhere to a lesion's row (report.html#case-x-lesion-2) opens its viewer there too
  function fromFragment() {
    var raw = window.location.hash.slice(1), id;
    try { id = decodeURIComponent(raw); } catch (e) { id = raw; }
    if (id) { goToRow(id); }
  }
  window.addEventListener("hashchange", fromFragment);
  fromFragment();

  window.ccmetricsViewer = { open: function (anchor) {
    var box = document.querySelector('details.viewer-box[data-viewer="' + anchor + '"]');
    if (!box) { return null; }
    box.open = true;
    return viewerOf(box).load();
  }, goToRow: goToRow, stats: STATS };
}());
