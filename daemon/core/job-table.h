/*
 * Every job the daemon knows: the active ones, and the finished ones it still
 * keeps for `jobs` until the retention rules drop them (from memory and from
 * the state directory). Each change of state goes through the table, which
 * saves the record and tells its observers: "job-changed". It knows nothing
 * of what the observers do with it.
 */
#pragma once

#include <gio/gio.h>

#include "job.h"

G_BEGIN_DECLS

#define VMR_TYPE_JOB_TABLE (vmr_job_table_get_type ())
G_DECLARE_FINAL_TYPE (VmrJobTable, vmr_job_table, VMR, JOB_TABLE, GObject)

/*
 * Signals:
 *   "job-changed" (gpointer job, gint previous_state)   after a new job was
 *                 added (previous = queued) and after every transition; @job
 *                 is a VmrJob *, valid during the emission. For a final
 *                 state the handlers run before the job's waiters complete.
 */

/* the table of the records under @state_dir/jobs; it loads nothing yet */
VmrJobTable *vmr_job_table_new (const gchar *state_dir);

/* the id for a new job: "vmr-N", N one more than any job of this or an earlier run */
gchar *vmr_job_table_next_id (VmrJobTable *self);

/* adds the new @job (a reference is taken), saves it and emits "job-changed" */
void vmr_job_table_add (VmrJobTable *self, VmrJob *job);

/*
 * Loads the records an earlier run left: the jobs that had not ended join
 * the table orphaned (returned, oldest first, transfer container); finished
 * ones stay on disk for the retention rules only.
 */
GPtrArray *vmr_job_table_load_unfinished (VmrJobTable *self);

/* the job @id, active or kept, or NULL */
VmrJob *vmr_job_table_lookup (VmrJobTable *self, const gchar *id);

/*
 * As vmr_job_table_lookup(), and else the finished job @id of an earlier run
 * whose record the retention rules still keep, loaded from it into the
 * table (so that it is kept, listed and saved as a job of this run); NULL
 * when there is neither.
 */
VmrJob *vmr_job_table_lookup_or_load (VmrJobTable *self, const gchar *id);

/*
 * As vmr_job_table_lookup(), and else the finished job @id of an earlier run
 * whose record the retention rules keep, read from its record without
 * adding it to the table; NULL when there is neither (transfer full).
 */
VmrJob *vmr_job_table_read (VmrJobTable *self, const gchar *id);

/* the jobs that have not ended, oldest first (transfer none) */
GPtrArray *vmr_job_table_get_active (VmrJobTable *self);

/* every job kept, active or finished, oldest first (transfer container) */
GPtrArray *vmr_job_table_list (VmrJobTable *self);

/* the active job on @disk of @domain, or NULL */
VmrJob *vmr_job_table_active_for_disk (VmrJobTable *self, const gchar *domain, const gchar *disk);

/* the active job that writes @destination, or NULL */
VmrJob *vmr_job_table_active_for_destination (VmrJobTable *self, const gchar *destination);

/* writes @job's record; a failure is logged: the job goes on */
void vmr_job_table_save (VmrJobTable *self, VmrJob *job);

/*
 * Moves @job to @state: logs it, keeps the time the policy held it back,
 * saves the record and emits "job-changed"; a final state then completes the
 * job's waiters and hands the job to the retention rules. FALSE, changing
 * nothing, when the state machine does not allow it.
 */
gboolean vmr_job_table_set_state (VmrJobTable *self, VmrJob *job, VmrJobState state,
                                  const gchar *reason);

/* completes @task (consumed) with the job once it has ended (at once if it has) */
void vmr_job_table_add_waiter (VmrJobTable *self, VmrJob *job, GTask *task);

/*
 * How long (µs, 0 = no limit) and how many (0 = no limit) finished jobs
 * are kept; the oldest go first. Applies the rules at once.
 */
void vmr_job_table_set_retention (VmrJobTable *self, gint64 keep_us, guint keep_count);

G_END_DECLS
