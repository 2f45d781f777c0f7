// bpfprof flame graph: click a frame to zoom into it (its callers stay below,
// full width and faded), "Reset zoom" or Escape to go back, hover for the
// frame's samples in the details line. The standalone SVG runs this alone;
// the HTML page runs it first and builds search on window.bpfprofFlame.
(function () {
  'use strict';
  const svg = document.querySelector('svg.bpfprof-flame');
  if (!svg) return;
  const pad = Number(svg.getAttribute('data-pad'));
  const total = Number(svg.getAttribute('data-total'));
  const plot = Number(svg.getAttribute('viewBox').split(' ')[2]) - 2 * pad;
  // Same fitting rule as the C++ renderer (flamegraph_svg.cc).
  const charWidth = 6.7;
  const inset = 3;

  const frames = [];
  const byElement = new Map();
  for (const g of svg.querySelectorAll('g.f')) {
    const title = g.querySelector('title').textContent;
    const f = {
      g: g,
      x: Number(g.getAttribute('data-x')),
      w: Number(g.getAttribute('data-w')),
      d: Number(g.getAttribute('data-d')),
      rect: g.querySelector('rect'),
      text: g.querySelector('text'),
      name: title.slice(0, title.lastIndexOf(' (')),
      title: title,
    };
    frames.push(f);
    byElement.set(g, f);
  }
  const root = frames.find((f) => f.d === 0);

  function label(name, width) {
    const room = Math.floor((width - 2 * inset) / charWidth);
    if (room < 3) return '';
    return name.length <= room ? name : name.slice(0, room - 2) + '..';
  }

  function place(f, x, width) {
    f.rect.setAttribute('x', x.toFixed(2));
    f.rect.setAttribute('width', width.toFixed(2));
    f.text.setAttribute('x', (x + inset).toFixed(2));
    f.text.textContent = label(f.name, width);
  }

  const listeners = [];
  let zoomed = root;

  // Shows `z` across the whole width: frames inside its span and at or above
  // its depth scale up, its callers below span the width, the rest hide.
  function zoom(z) {
    if (!z) return;
    zoomed = z;
    for (const f of frames) {
      const inside = f.d >= z.d && f.x >= z.x && f.x + f.w <= z.x + z.w;
      const caller = f.d < z.d && f.x <= z.x && f.x + f.w >= z.x + z.w;
      f.g.classList.toggle('hidden', !inside && !caller);
      f.g.classList.toggle('ancestor', caller);
      if (inside) place(f, pad + ((f.x - z.x) / z.w) * plot, (f.w / z.w) * plot);
      else if (caller) place(f, pad, plot);
    }
    svg.classList.toggle('zoomed', z !== root);
    for (const fn of listeners) fn(z);
  }

  function reset() {
    zoom(root);
  }

  const details = document.getElementById('details');
  function show(text) {
    if (details) details.textContent = text;
  }

  svg.addEventListener('click', (e) => {
    const g = e.target.closest('g.f');
    if (g) zoom(byElement.get(g));
  });
  svg.addEventListener('mouseover', (e) => {
    const g = e.target.closest('g.f');
    if (g) show(byElement.get(g).title);
  });
  svg.addEventListener('mouseout', () => show('\u00a0'));
  const resetButton = document.getElementById('reset');
  if (resetButton) resetButton.addEventListener('click', reset);
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') reset();
  });

  window.bpfprofFlame = {
    frames: frames,
    total: total,
    zoom: zoom,
    reset: reset,
    zoomed: () => zoomed,
    onZoom: (fn) => listeners.push(fn),
  };
})();
