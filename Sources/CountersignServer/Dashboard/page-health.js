// Health: each app's setup (what arrives by channel, whether developer copies arrive), verification outcomes and
// reasons over time, unverifiable postbacks waiting for a key, token failures, storage errors, and ingest rate and
// latency from this server's own metrics.
import { api, chart, format, metrics, reportFilters, section, series, table, tiles, total } from './core.js';

/** The mean of a Prometheus histogram or summary (`_sum` / `_count`), in seconds. */
function mean(samples, name) {
  const sum = total((samples[name + '_sum'] || []).map((sample) => ({ value: sample.value })), 'value');
  const count = total((samples[name + '_count'] || []).map((sample) => ({ value: sample.value })), 'value');
  return count ? sum / count : NaN;
}

/** The sum of every sample of a counter. */
function counter(samples, name) {
  return (samples[name] || []).reduce((sum, sample) => sum + sample.value, 0);
}

const copies = { arriving: 'Arriving', unverified_only: 'Unverified only', none: 'None arrived', not_configured: 'No copy domain' };

/** Per app: whether developer copies arrive; per protocol, version, ad network and channel: what arrived and how it fared. */
function renderSetup(main, status, named) {
  const setup = section(main, 'Setup per app (last 30 days)', { wide: true,
    note: 'Developer copies are the postbacks Apple sends to the domain in the app\'s Info.plist (docs/setup.md); register that domain with countersign apps set ID --copy-domain example.com so they are told from networks\' postbacks. Only copies signed with Apple\'s keys count as arriving: anyone can send a body naming the app to that domain, so those that fail the signature check are shown apart (Unverified copies; Unverified only when no signed copy came), and so is the share failing verification, which such bodies raise too.' });
  table(setup, { id: 'setup-apps', caption: 'Developer copies by app', rows: status.apps.map((row) => ({ ...row, copies: copies[row.developer_copies] })), columns: [
    { key: 'app', label: 'App' }, { key: 'app_name', label: 'Name' }, { key: 'copy_domain', label: 'Copy domain' },
    { key: 'copies', label: 'Developer copies' }, { key: 'last_copy_at', label: 'Last signed copy', kind: 'time' },
    { key: 'verified_copies', label: 'Signed copies', kind: 'count' }, { key: 'unverified_copies', label: 'Unverified copies', kind: 'count' },
    { key: 'last_received_at', label: 'Last postback', kind: 'time' },
    { key: 'arrivals', label: 'Arrivals', kind: 'count' }, { key: 'failing_share', label: 'Failing verification (anyone can raise)', kind: 'share' },
  ] });
  table(setup, { id: 'setup-encoder', caption: 'What the postbacks say about each app\'s encoder (docs/app-integration.md)', rows: status.encoder || [], columns: [
    { key: 'app', label: 'App' }, { key: 'symptom', label: 'Symptom' }, { key: 'detail', label: 'Detail' }, { key: 'day', label: 'Since' },
    { key: 'share', label: 'Share', kind: 'share' }, { key: 'postbacks', label: 'Postbacks', kind: 'count' },
    { key: 'cause', label: 'Likely cause' }, { key: 'docs', label: 'Read' },
  ] });
  table(setup, { id: 'setup', caption: 'Arrivals by app, protocol, version, ad network and channel', rows: status.rows.map(named), report: status, columns: [
    { key: 'app_name', label: 'App' }, { key: 'protocol', label: 'Protocol' }, { key: 'version', label: 'Version' },
    { key: 'ad_network_name', label: 'Ad network', title: 'ad_network' }, { key: 'channel', label: 'Channel' }, { key: 'last_received_at', label: 'Last received', kind: 'time' },
    { key: 'arrivals', label: 'Arrivals', kind: 'count' }, { key: 'verified', label: 'Verified', kind: 'count' },
    { key: 'development', label: 'Development', kind: 'count' }, { key: 'unverifiable', label: 'Unverifiable', kind: 'count' },
    { key: 'invalid', label: 'Invalid', kind: 'count' }, { key: 'refused', label: 'Refused', kind: 'count' },
    { key: 'failing_share', label: 'Failing (anyone can raise)', kind: 'share' },
  ] });
}

/** What each network signs: its postbacks' protocol versions, winners, windows, view-through and re-engagements. */
function renderSigning(main, signing, named) {
  const mix = section(main, 'What each network signs (last 30 days)', { wide: true,
    note: 'Shares of the postbacks Apple signed for each network (production keys, every window and class). A network said to "behave as SKAdNetwork 3" shows it here: no later windows, no coarse values. Tiers are in GET /v1/networks/signing and countersign signing (docs/metrics.md).' });
  table(mix, { id: 'signing', caption: 'Postbacks by network: versions, winners, windows, view-through, re-engagements', rows: signing.rows.map(named), report: signing, columns: [
    { key: 'ad_network_name', label: 'Ad network', title: 'ad_network' }, { key: 'postbacks', label: 'Postbacks', kind: 'count' },
    { key: 'skan_1_2', label: 'SKAN 1-2', kind: 'share' }, { key: 'skan_3', label: 'SKAN 3', kind: 'share' },
    { key: 'skan_4', label: 'SKAN 4', kind: 'share' }, { key: 'aak', label: 'AAK', kind: 'share' },
    { key: 'non_winning', label: 'Non-winning', kind: 'share' }, { key: 'window_1', label: 'Window 1', kind: 'share' },
    { key: 'window_2', label: 'Window 2', kind: 'share' }, { key: 'view_through', label: 'View-through', kind: 'share' },
    { key: 're_engagements', label: 'Re-engage', kind: 'share' }, { key: 'installs', label: 'Installs', kind: 'count' },
    { key: 'claimed_installs', label: 'Claimed', kind: 'count' },
  ] });
}

/** Outcomes over time, outcomes by reason, and the unverifiable postbacks waiting for a key. */
function renderOutcomes(main, outcomes, reasons, waiting) {
  const overTime = section(main, 'Verification outcomes per day');
  chart(overTime, 'chart-health', 'Verification outcomes per day', {
    type: 'line', data: series(outcomes.rows, 'day', 'status', 'postbacks'),
    options: { scales: { y: { beginAtZero: true } } },
  });

  const why = section(main, 'Outcomes and reasons');
  table(why, { id: 'reasons', caption: 'Postbacks by outcome and reason', rows: reasons.rows, report: reasons, columns: [
    { key: 'status', label: 'Outcome' }, { key: 'reason', label: 'Reason' }, { key: 'postbacks', label: 'Postbacks', kind: 'count' },
  ] });

  const keys = section(main, 'Unverifiable postbacks waiting for a key', { wide: true,
    note: 'Kept and never counted: unknown_kid names a key Countersign does not pin, unknown_version a SKAdNetwork version this build does not know. Once Apple publishes the key (or a SKAdNetwork version this build knows), pin it and run countersign reverify: they are checked again and counted if genuine.' });
  table(keys, { id: 'unverifiable', caption: 'Unverifiable postbacks by protocol, version and reason', rows: waiting.rows, report: waiting, columns: [
    { key: 'protocol', label: 'Protocol' }, { key: 'version', label: 'Version' }, { key: 'reason', label: 'Reason' },
    { key: 'postbacks', label: 'Postbacks', kind: 'count' },
  ] });
}

export default {
  title: 'Health',
  async render(main, query) {
    const filters = reportFilters(query, { uncounted: false });
    const [status, signing, outcomes, reasons, waiting, jobs, first, networks] = await Promise.all([
      api('setup', { app: filters.app }),
      api('networks/signing', { app: filters.app }),
      api('intake', { ...filters, by: 'day,status' }),
      api('intake', { ...filters, by: 'status,reason' }),
      api('intake', { ...filters, status: 'unverifiable', by: 'protocol,version,reason' }),
      api('adservices/jobs', { state: 'failed', limit: 1 }).catch(() => ({ counts: {} })),
      metrics(),
      api('ad-networks').catch(() => ({ ad_networks: [] })),
    ]);
    // Networks by their registered names (the id in the cell's tooltip), as the reports show them.
    const names = new Map((networks.ad_networks || []).map((network) => [network.ad_network_id, network.name]));
    const named = (row) => ({ ...row, ad_network_name: names.get(row.ad_network) ?? row.ad_network });

    renderSetup(main, status, named);
    renderSigning(main, signing, named);
    // Requests received come from the database, so a restart does not reset them; the rest is this receiver's own.
    const received = total(outcomes.rows, 'postbacks');
    const server = section(main, 'This server', { wide: true, note: first
      ? 'Requests received: every postback request stored in these dates (all receivers). The rest comes from this receiver\'s /metrics since it started; the rate is measured over the next few seconds. Other receivers report their own.'
      : 'This server protects /metrics: sign in with a key that has the metrics scope to see its rates and errors here.' });
    if (!first) {
      tiles(server, [{ id: 'received', label: 'Requests received', value: received, shown: format.count(received) }]);
      return renderOutcomes(main, outcomes, reasons, waiting);
    }
    const requests = counter(first, 'countersign_postback_requests_total');
    const items = [
      { id: 'received', label: 'Requests received', value: received, shown: format.count(received) },
      { id: 'requests', label: 'Requests since this receiver started', value: requests, shown: format.count(requests) },
      { id: 'rate', label: 'Postbacks per second', value: '', shown: 'measuring…' },
      { id: 'commit_failures', label: 'Storage errors (failed commits)', value: counter(first, 'countersign_commit_failures_total'),
        shown: format.count(counter(first, 'countersign_commit_failures_total')) },
      { id: 'fold_failures', label: 'Rollup fold failures', value: counter(first, 'countersign_rollup_fold_failures_total'),
        shown: format.count(counter(first, 'countersign_rollup_fold_failures_total')) },
      { id: 'commit_latency', label: 'Mean commit time', value: mean(first, 'countersign_commit_seconds'), shown: format.seconds(mean(first, 'countersign_commit_seconds')) },
      { id: 'verify_latency', label: 'Mean verify time', value: mean(first, 'countersign_verify_seconds'), shown: format.seconds(mean(first, 'countersign_verify_seconds')) },
      { id: 'token_failures', label: 'Failed token jobs', value: jobs.counts?.failed ?? 0, shown: format.count(jobs.counts?.failed ?? 0) },
    ];
    tiles(server, items);
    const started = performance.now();
    setTimeout(async () => {
      const rate = document.querySelector('[data-kpi="rate"]');
      if (!rate) return;
      const later = await metrics().catch(() => null);
      if (!later) return;
      const perSecond = (counter(later, 'countersign_postback_requests_total') - requests) / ((performance.now() - started) / 1000);
      rate.dataset.value = perSecond;
      rate.querySelector('.value').textContent = format.count(Math.round(perSecond));
    }, 3000);

    renderOutcomes(main, outcomes, reasons, waiting);
  },
};
