// The dashboard shell: sign-in, navigation, the filter form and page rendering; the state lives in the URL.
import { api, APIError, element, filterNames, readState, session, stateURL } from './core.js';
import overview from './page-overview.js';
import campaigns from './page-campaigns.js';
import events from './page-events.js';
import performancePage from './page-performance.js';
import appleAds from './page-apple-ads.js';
import health from './page-health.js';
import lookup from './page-lookup.js';

const pages = { overview, campaigns, events, performance: performancePage, 'apple-ads': appleAds, health, lookup };
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

function fillFilters(query) {
  for (const name of filterNames) filters.elements[name].value = query.get(name) || '';
}

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
    const ids = [...new Set([...counted.rows, ...development.rows].map((row) => String(row.app)).concat([...names.keys()]))].sort();
    document.getElementById('apps').replaceChildren(...ids.map((id) => element('option', { value: id, label: names.get(id) })));
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
  const signedIn = Boolean(session.key);
  signIn.hidden = signedIn;
  filters.hidden = !signedIn;
  signOut.hidden = !signedIn;
  main.replaceChildren();
  if (!signedIn) return;
  fillFilters(query);
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
  history.pushState(null, '', stateURL(changes));
  render();
});

signIn.addEventListener('submit', async (event) => {
  event.preventDefault();
  session.key = signIn.elements.key.value.trim();
  signIn.elements.key.value = '';
  await render();
  if (session.key) fillSuggestions();
});

signOut.addEventListener('click', () => {
  session.key = null;
  showNotice('');
  render();
});

window.addEventListener('popstate', render);
window.addEventListener('countersign:navigate', render);
render().then(() => { if (session.key) fillSuggestions(); });
