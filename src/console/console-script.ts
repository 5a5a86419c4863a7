/**
 * `/console/console.js`, the console's one script (no build step, no request off the listener):
 * draws the step timeline bars from their data attributes (no inline style under the CSP), and
 * on the page of a running task polls its JSON (`data-live`) and, when the task moved, reads the
 * page again and swaps its `<main>` (parsed, never run: the parsed document runs no script). It
 * stops once the task is terminal. Everything shown came escaped from the server.
 */
export const CONSOLE_SCRIPT = `'use strict';
(function () {
  function bars(root) {
    root.querySelectorAll('.bar[data-left]').forEach(function (bar) {
      bar.style.marginLeft = bar.getAttribute('data-left') + '%';
      bar.style.width = bar.getAttribute('data-width') + '%';
    });
  }
  function start() {
    bars(document);
    var url = document.body.getAttribute('data-live');
    if (!url) return;
    var seen = null;
    var delay = 1000;
    function poll() {
      fetch(url, { credentials: 'same-origin', cache: 'no-store' })
        .then(function (res) {
          if (!res.ok) throw new Error('status ' + res.status);
          return res.json();
        })
        .then(function (state) {
          var key = [state.version, state.steps, state.stepsUpdatedAt, state.auditLines].join(':');
          var changed = seen !== null && key !== seen;
          seen = key;
          delay = 1000;
          if (!changed) return state.terminal ? 'stop' : 'again';
          return fetch(location.href, { credentials: 'same-origin', cache: 'no-store' })
            .then(function (res) { return res.text(); })
            .then(function (text) {
              var next = new DOMParser().parseFromString(text, 'text/html').querySelector('main');
              var main = document.querySelector('main');
              if (next && main) {
                main.replaceWith(document.importNode(next, true));
                bars(document);
              }
              document.body.setAttribute('data-version', String(state.version));
              return state.terminal ? 'stop' : 'again';
            });
        })
        .then(function (what) {
          if (what === 'stop') document.body.setAttribute('data-live-stopped', 'true');
          else setTimeout(poll, delay);
        }, function () {
          delay = Math.min(delay * 2, 15000);
          setTimeout(poll, delay);
        });
    }
    poll();
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
`;
