// SQLite's job runner claims each lane's jobs task by task (src/jobs/lanes.ts): the oldest due
// jobs of one task, through this index, instead of walking every pending job in run_at order (an
// import's 100,000 queued emails lie in front of an export's one job). PostgreSQL's jobs are
// graphile-worker's.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') return;
  await knex.schema.alterTable('jobs', (t) => t.index(['task', 'run_at', 'id'], 'jobs_task_due'));
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') return;
  await knex.schema.alterTable('jobs', (t) => t.dropIndex([], 'jobs_task_due'));
}
