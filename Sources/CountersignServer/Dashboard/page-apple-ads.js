// Apple Ads: attributions by campaign, ad group and keyword with names; AdServices token jobs by state and the
// recent failures.
import { api, chart, reportFilters, section, table, tiles, format } from './core.js';

const jobStates = ['pending', 'retrying', 'done', 'failed'];

export default {
  title: 'Apple Ads',
  filters: ['range', 'from', 'to', 'tz', 'app'],
  async render(main, query) {
    const { from, to, tz, app } = reportFilters(query);
    const dates = { from, to, tz, app };
    const [attributions, jobs, failures] = await Promise.all([
      api('adservices/report', { ...dates, by: 'campaign,ad_group,keyword' }),
      api('adservices/jobs', { state: jobStates.join(','), limit: 1 }),
      api('adservices/jobs', { state: 'failed', limit: 20, order: 'newest' }),
    ]);

    const records = section(main, 'Attributions', { wide: true, note: 'Apple\'s AdServices records (developer-mode test payloads and app-reported iAd records left out).' });
    tiles(records, [
      { id: 'attributed', label: 'Attributed', value: attributions.rows.reduce((sum, row) => sum + Number(row.attributed), 0),
        shown: format.count(attributions.rows.reduce((sum, row) => sum + Number(row.attributed), 0)) },
      { id: 'records', label: 'Records', value: attributions.rows.reduce((sum, row) => sum + Number(row.records), 0),
        shown: format.count(attributions.rows.reduce((sum, row) => sum + Number(row.records), 0)) },
    ]);
    const campaigns = attributions.rows.filter((row) => row.campaign_id !== null);
    chart(records, 'chart-apple-ads', 'Attributions by campaign', {
      type: 'bar',
      data: { labels: campaigns.map((row) => `${row.campaign_name ?? row.campaign_id} · ${row.keyword ?? row.keyword_id ?? '–'}`),
        datasets: [{ label: 'Attributed', data: campaigns.map((row) => Number(row.attributed)) }] },
      options: { indexAxis: 'y', scales: { x: { beginAtZero: true } } },
    });
    table(records, { id: 'apple-ads', caption: 'Attribution records by campaign, ad group and keyword', rows: attributions.rows, report: attributions,
      empty: 'No Apple Ads attribution in these dates: records come from the AdServices tokens apps send (docs/apple-ads.md).', columns: [
      { key: 'campaign_id', label: 'Campaign' }, { key: 'campaign_name', label: 'Campaign name' },
      { key: 'ad_group_id', label: 'Ad group' }, { key: 'ad_group_name', label: 'Ad group name' },
      { key: 'keyword_id', label: 'Keyword id' }, { key: 'keyword', label: 'Keyword' },
      { key: 'records', label: 'Records', kind: 'count' }, { key: 'attributed', label: 'Attributed', kind: 'count' },
      { key: 'downloads', label: 'Downloads', kind: 'count' }, { key: 'redownloads', label: 'Redownloads', kind: 'count' },
    ] });

    const queue = section(main, 'Token jobs by state', { note: 'AdServices tokens waiting, retried under Apple\'s rules, exchanged (done) or failed.' });
    const counts = jobStates.map((state) => ({ state, jobs: jobs.counts?.[state] ?? 0 }));
    chart(queue, 'chart-jobs', 'Token jobs by state', {
      type: 'bar', data: { labels: jobStates, datasets: [{ label: 'Jobs', data: counts.map((row) => row.jobs) }] },
      options: { scales: { y: { beginAtZero: true } } },
    });
    table(queue, { id: 'job-states', caption: 'Token jobs by state', rows: counts, columns: [
      { key: 'state', label: 'State' }, { key: 'jobs', label: 'Jobs', kind: 'count' },
    ] });

    const failed = section(main, 'Recent failures');
    table(failed, { id: 'job-failures', caption: 'The latest failed token jobs', rows: failures.rows, report: failures, empty: 'No token job has failed.', columns: [
      { key: 'id', label: 'Job' }, { key: 'app', label: 'App' }, { key: 'received_at', label: 'Received' },
      { key: 'attempts', label: 'Attempts', kind: 'count' }, { key: 'last_answer', label: 'Last answer' },
      { key: 'failure_reason', label: 'Reason' },
    ] });
  },
};
