//! The stylesheet and the script, embedded in the binary (no CDN, nothing fetched). The
//! pages have no inline styles or scripts (their `Content-Security-Policy` forbids them):
//! everything they need is here.
//!
//! The script follows `/api/events` (server-sent events): on every `change` event it fetches
//! the current page again and swaps its `<main>`, so numbers, bars and plots update without a
//! reload. When the stream drops, the browser's EventSource reconnects by itself.

/// `/static/grind.css`
pub const CSS: &str = r#"
:root{--bg:#fbfbfa;--fg:#1d232a;--muted:#5f6b76;--line:#dde1e5;--accent:#1f6feb;--ok:#1a7f37;
--warn:#b35900;--bad:#c62828;--card:#ffffff}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
background:var(--bg);color:var(--fg)}
header{display:flex;flex-wrap:wrap;align-items:center;gap:.25rem 1rem;padding:.6rem 1rem;
border-bottom:1px solid var(--line);background:var(--card)}
.brand{font-weight:700;font-size:1.15rem;color:var(--fg);text-decoration:none}
nav{display:flex;flex-wrap:wrap;gap:.8rem}
nav a{color:var(--muted);text-decoration:none}
nav a.on{color:var(--fg);font-weight:600;border-bottom:2px solid var(--accent)}
.live{margin-left:auto;color:var(--muted);font-size:.8rem}
.live.on{color:var(--ok)}
main{padding:1rem;max-width:1400px;margin:0 auto}
footer{padding:1rem;color:var(--muted);font-size:.8rem;text-align:center;overflow-wrap:anywhere}
h1{font-size:1.35rem;margin:.2rem 0 .8rem}
h2{font-size:1.08rem;margin:1.4rem 0 .5rem}
a{color:var(--accent)}
.muted,.tick{color:var(--muted);fill:var(--muted)}
.scroll{overflow-x:auto;max-width:100%;-webkit-overflow-scrolling:touch}
table{border-collapse:collapse;width:100%;background:var(--card)}
th,td{padding:.35rem .55rem;border-bottom:1px solid var(--line);text-align:left;
vertical-align:top;white-space:nowrap}
th{font-size:.78rem;text-transform:uppercase;letter-spacing:.03em;color:var(--muted)}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td.wrap{white-space:normal;overflow-wrap:anywhere;min-width:24rem}
td.params{white-space:normal;overflow-wrap:break-word;min-width:12rem;max-width:20rem;font-size:.85rem}
.badge{display:inline-block;padding:0 .45rem;border-radius:.6rem;font-size:.78rem;
background:var(--line)}
.s-running{background:#dbeafe}.s-done{background:#dcfce7}.s-failed{background:#fee2e2}
.s-paused{background:#fef3c7}.s-cancelled{background:#e5e7eb}
.proven{color:var(--ok);font-weight:600}
svg.bar{display:block;width:100%;min-width:7rem;height:.8rem;border-radius:.4rem}
svg.bar .track{fill:var(--line)}
svg.bar .fill{fill:var(--accent)}
svg.bar .band{fill:rgba(31,111,235,.3)}
.small{font-size:.8rem;color:var(--muted)}
tr.stale td{background:#fff4e5}
tr.stale .age{color:var(--bad);font-weight:600}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(10rem,1fr));gap:.6rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:.5rem;padding:.5rem .7rem}
.card .k{font-size:.75rem;text-transform:uppercase;color:var(--muted)}
.card .v{font-size:1.15rem;font-weight:600;overflow-wrap:anywhere}
pre{background:var(--card);border:1px solid var(--line);padding:.6rem;overflow-x:auto;
max-width:100%;font-size:.85rem;white-space:pre-wrap;overflow-wrap:anywhere}
details.params summary{cursor:pointer;overflow-wrap:break-word}
details.params pre{margin:.3rem 0 0;font-size:.75rem}
table.seq{width:auto;font-variant-numeric:tabular-nums}
table.seq th{text-align:right;text-transform:none;font-weight:400}
table.seq td{text-align:right;padding:.15rem .4rem}
svg{display:block}
svg.plot{width:100%;height:auto;max-width:760px;background:var(--card);border:1px solid var(--line)}
svg.figure{max-width:100%;height:auto}
svg .axis{stroke:var(--muted);stroke-width:1}
svg .line{fill:none;stroke:var(--accent);stroke-width:2}
svg .dot{fill:var(--accent)}
svg text{font-size:11px}
svg rect.card{fill:#eef2f7;stroke:#c5ccd4}
svg rect.card.flip{fill:#ffe3b8;stroke:#d08a2a}
svg .cardtext{font-size:11px;fill:var(--fg)}
svg .bridge{stroke:#d5d9de;stroke-width:2}
svg .walk{stroke:var(--accent);stroke-width:3;stroke-opacity:.55;stroke-linecap:round}
svg .city{fill:#8a96a3}
svg .start{fill:var(--ok)}
svg .end{fill:var(--bad)}
.chips{display:flex;flex-wrap:wrap;gap:.3rem}
.chip{border:1px solid var(--line);background:var(--card);border-radius:.3rem;padding:0 .35rem;
font-variant-numeric:tabular-nums}
ol.chips{list-style:none;padding:0;margin:.4rem 0;counter-reset:chip}
ol.chips>li{counter-increment:chip}
ol.chips>li::before{content:counter(chip) ".";margin-right:.25em;color:var(--muted);font-size:.72em}
table.ticket{width:auto;margin:.3rem 0;border:2px solid var(--fg)}
table.ticket td{width:2rem;height:2rem;text-align:center;border:1px solid var(--line)}
@media (max-width:640px){main{padding:.6rem}th,td{padding:.3rem .4rem}
.hide-sm{display:none}}
"#;

/// `/static/grind.js`
pub const JS: &str = r#"
(function(){
  var main = document.getElementById('live');
  var dot = document.getElementById('live-state');
  if (!main || !window.EventSource) return;
  var busy = false, again = false;
  function refresh(){
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, {headers: {'X-Grind-Partial': '1'}, cache: 'no-store'})
      .then(function(r){ return r.ok ? r.text() : null; })
      .then(function(html){ if (html !== null) main.innerHTML = html; })
      .catch(function(){})
      .then(function(){ busy = false; if (again) { again = false; refresh(); } });
  }
  var source = new EventSource('/api/events');
  source.addEventListener('change', refresh);
  source.onopen = function(){ dot.classList.add('on'); };
  source.onerror = function(){ dot.classList.remove('on'); };
})();
"#;
