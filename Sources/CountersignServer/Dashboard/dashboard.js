// The dashboard shell: sign-in, navigation, the filter form and page rendering; the state lives in the URL.
import { api, APIError, element, filterNames, readState, session, shownRange, stateURL } from './core.js';
import overview from './page-overview.js';
import campaigns from './page-campaigns.js';
import events from './page-events.js';
import performancePage from './page-performance.js';
import values from './page-values.js';
import appleAds from './page-apple-ads.js';
import health from './page-health.js';
import lookup from './page-lookup.js';

const pages = { overview, campaigns, values, events, performance: performancePage, 'apple-ads': appleAds, health, lookup };
const main = document.getElementById('page');
const filters = document.getElementById('filters');
const signIn = document.getElementById('sign-in');
const notice = document.getElementById('notice');
const signOut = document.getElementById('sign-out');
let rendering = 0;

function showNotice(text) {
  notice.textContent = text;
  notice.hidden = !text;
}

function describe(error) {
  if (error instanceof APIError && error.status === 401) {
    return `The API key was refused (${error.code}): ${error.message}. Sign in with a valid key.`;
  }
  if (error instanceof APIError && error.code === 'too_many_groups') {
    return `This report has more rows than the server adds up at once (too_many_groups): ${error.message}. Pick fewer days, or filter by app or ad network.`;
  }
  if (error instanceof APIError) return `The server answered ${error.status} (${error.code}): ${error.message}`;
  return `Could not reach the server: ${error.message}`;
}

function renderNavigation(current) {
  const nav = document.getElementById('pages');
  nav.replaceChildren();
  for (const [name, page] of Object.entries(pages)) {
    const link = element('a', { href: stateURL({ page: name, sort: null }), 'aria-current': name === current ? 'page' : null, text: page.title });
    link.addEventListener('click', (event) => {
      event.preventDefault();
      history.pushState(null, '', link.getAttribute('href'));
      render();
    });
    nav.append(link);
  }
}

/** The filter form as the URL says, showing only the filters the page uses (`page.filters`, else all). */
function fillFilters(query, page) {
  const used = new Set(page.filters || filterNames);
  for (const label of filters.querySelectorAll('[data-filter]')) label.hidden = !used.has(label.dataset.filter);
  filters.hidden = used.size === 0;
  const app = query.get('app') || '';
  const apps = filters.elements.app;
  if (app && ![...apps.options].some((option) => option.value === app)) apps.append(element('option', { value: app, text: app }));
  for (const name of filterNames) filters.elements[name].value = query.get(name) || '';
  showZone();
  // A preset shows the days it covers; the last day is included, as the label says.
  const range = shownRange(query);
  filters.elements.from.value = range.from;
  filters.elements.to.value = range.to;
}

/** A preset picked: its days shown at once; a day edited: the range becomes custom. */
filters.elements.range.addEventListener('change', () => {
  const query = new URLSearchParams({ range: filters.elements.range.value, tz: filters.elements.tz.value });
  if (filters.elements.range.value !== 'custom') {
    // All time shows no days; a preset the days it covers.
    const range = filters.elements.range.value ? shownRange(query) : { from: '', to: '' };
    filters.elements.from.value = range.from;
    filters.elements.to.value = range.to;
  }
});
for (const name of ['from', 'to']) {
  filters.elements[name].addEventListener('input', () => { filters.elements.range.value = 'custom'; });
}

/** Each registered app's time zone, which the API uses for an app's days when no zone is typed. */
const appZones = new Map();

/** The zone box's hint: the zone the picked app's days are counted in when none is typed, else UTC. */
function showZone() {
  filters.elements.tz.placeholder = appZones.get(filters.elements.app.value) || 'UTC';
}
filters.elements.app.addEventListener('change', showZone);

async function fillSuggestions() {
  try {
    const networks = await api('ad-networks');
    const list = document.getElementById('ad-networks');
    list.replaceChildren(...(networks.ad_networks || []).map((row) => element('option', { value: row.ad_network_id, label: row.name })));
    // Registered apps and apps with postbacks Apple signed (counted, or development), named from the app registry where
    // it has them; never apps named only by postbacks nobody could verify, which anyone can send.
    const [counted, development, registry] = await Promise.all([
      api('reports', { by: 'app' }), api('reports', { by: 'app', environment: 'development' }), api('apps').catch(() => ({ apps: [] })),
    ]);
    const names = new Map(registry.apps.map((entry) => [String(entry.app), entry.name]));
    for (const entry of registry.apps) if (entry.time_zone) appZones.set(String(entry.app), entry.time_zone);
    const ids = [...new Set([...counted.rows, ...development.rows].map((row) => String(row.app)).concat([...names.keys()]))].sort();
    // Apps by name (and id): a select, so the filter reads as the app.
    const apps = filters.elements.app;
    const chosen = apps.value;
    apps.replaceChildren(element('option', { value: '', text: 'All apps' }),
      ...ids.map((id) => element('option', { value: id, text: names.has(id) ? `${names.get(id)} (${id})` : id })));
    if (chosen && !ids.includes(chosen)) apps.append(element('option', { value: chosen, text: chosen }));
    apps.value = chosen;
    showZone();
  } catch {
    // Suggestions only help typing; the page itself reports any error.
  }
}

/** Renders the page the URL names, or the sign-in form without a key. */
async function render() {
  const token = ++rendering;
  const { page: name, query } = readState();
  const page = pages[name] || pages.overview;
  renderNavigation(name in pages ? name : 'overview');
  const signedIn = session.signedIn;
  signIn.hidden = signedIn;
  filters.hidden = !signedIn;
  // A proxy's sign-in has nothing to sign out of here.
  signOut.hidden = !session.key;
  main.replaceChildren();
  if (!signedIn) return;
  fillFilters(query, page);
  document.title = `${page.title} · Countersign`;
  main.setAttribute('aria-busy', 'true');
  try {
    showNotice('');
    await page.render(main, query);
  } catch (error) {
    if (token !== rendering) return;
    showNotice(describe(error));
    if (error instanceof APIError && error.status === 401) {
      session.key = null;
      session.proxied = false;
      signIn.hidden = false;
      filters.hidden = true;
      signOut.hidden = true;
      main.replaceChildren();
    }
  } finally {
    if (token === rendering) {
      main.setAttribute('aria-busy', 'false');
      main.dataset.rendered = name;
    }
  }
}

filters.addEventListener('submit', (event) => {
  event.preventDefault();
  const changes = {};
  for (const name of filterNames) changes[name] = filters.elements[name].value.trim();
  // A preset keeps only its name: its days move with the calendar. Custom days are kept as shown (the last included).
  if (changes.range && changes.range !== 'custom') { changes.from = ''; changes.to = ''; }
  if (!changes.range && (changes.from || changes.to)) changes.range = 'custom';
  history.pushState(null, '', stateURL(changes));
  render();
});

signIn.addEventListener('submit', async (event) => {
  event.preventDefault();
  session.key = signIn.elements.key.value.trim();
  signIn.elements.key.value = '';
  await render();
  if (session.signedIn) fillSuggestions();
});

signOut.addEventListener('click', () => {
  session.key = null;
  showNotice('');
  render();
});

/**
 * Without a key typed in this tab, whether a proxy signs the requests in: a report answers without one. Any refusal
 * (no proxy, or a key without the read scope) leaves the sign-in form.
 */
async function probeProxy() {
  if (session.key) return;
  try {
    await api('apps');
    session.proxied = true;
  } catch {
    session.proxied = false;
  }
}

window.addEventListener('popstate', render);
window.addEventListener('countersign:navigate', render);
probeProxy().then(render).then(() => { if (session.signedIn) fillSuggestions(); });
