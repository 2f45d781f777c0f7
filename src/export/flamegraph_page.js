// The HTML page around the flame graph: search by regular expression (the
// matching frames get the class "match" and the line above the graph says
// which share of the samples they cover), ?search=<regex> in the page's URL
// applied on load, and Reset, which clears the search and the zoom.
(function () {
  'use strict';
  const flame = window.bpfprofFlame;
  if (!flame) return;
  const input = document.getElementById('search');
  const matched = document.getElementById('matched');

  // A pattern that is not a valid regular expression is searched as text.
  function compile(pattern) {
    if (!pattern) return null;
    try {
      return new RegExp(pattern);
    } catch (e) {
      return new RegExp(pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    }
  }

  // Nested matches (a recursive function, a caller and its callee) cover the
  // same samples: count the union of their [x, x + w) spans once.
  function covered(spans) {
    spans.sort((a, b) => a[0] - b[0]);
    let sum = 0;
    let end = 0;
    for (const [from, to] of spans) {
      const start = Math.max(from, end);
      if (to > start) sum += to - start;
      end = Math.max(end, to);
    }
    return sum;
  }

  function search(pattern) {
    const re = compile(pattern);
    const spans = [];
    let count = 0;
    for (const f of flame.frames) {
      const hit = re !== null && f.d > 0 && re.test(f.name);
      f.g.classList.toggle('match', hit);
      if (hit) {
        spans.push([f.x, f.x + f.w]);
        count++;
      }
    }
    document.body.classList.toggle('searching', re !== null);
    if (re === null) {
      matched.textContent = '';
      return;
    }
    const share = flame.total > 0 ? (100 * covered(spans)) / flame.total : 0;
    matched.textContent = 'Matched: ' + share.toFixed(2) + '% (' + count +
        (count === 1 ? ' frame)' : ' frames)');
  }

  input.addEventListener('input', () => search(input.value));
  document.getElementById('reset').addEventListener('click', () => {
    input.value = '';
    search('');
  });
  document.addEventListener('keydown', (e) => {
    if ((e.ctrlKey || e.metaKey) && e.key === 'f') {
      e.preventDefault();
      input.focus();
    }
  });

  // A flame graph grows up from its root: when deep stacks make it taller
  // than its pane, open at the bottom, where the widest frames are.
  const pane = document.getElementById('graph');
  pane.scrollTop = pane.scrollHeight;

  const initial = new URLSearchParams(window.location.search).get('search');
  if (initial) {
    input.value = initial;
    search(initial);
  }
})();
