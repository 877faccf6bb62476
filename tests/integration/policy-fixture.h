/*
 * What the policy tests share: a daemon with the test's own policy file, a
 * guest booted under load, and what a job object says of the policy.
 */
#pragma once

#include "harness.h"

G_BEGIN_DECLS

#define MIB       (1024 * 1024)
#define DISK_SIZE (128 * MIB)

/* a guest busy at this rate is far above the thresholds below, even in a slow second */
#define GUEST_IOPS 800
/* a policy to start from: no thresholds yet, the tests set them from the guest's rate */
#define QUIET_POLICY "[defaults]\nsample-interval = 1s\n"

/* the policy's hold in the tests that use a guest, in seconds */
#define HOLD_S 3

/* writes @policy_text as the policy file and starts the daemon on it; returns the file's path */
gchar *start_policy_daemon (VmrHarness *h, const gchar *policy_text);

/* a fresh source image under the guest, the guest booting with @job, attached as "vm" */
gchar *boot_guest (VmrHarness *h, const VmrHarnessGuestJob *job, gsize size);

/* a guest-less, paused QEMU on a fresh 32 MiB source, attached as "vm" */
gchar *start_idle_vm (VmrHarness *h);

/* the job's state */
const gchar *job_state (JsonObject *job);

/* the job's "policy" object */
JsonObject *job_policy (JsonObject *job);

/* the policy's reason, "" when it has none */
const gchar *policy_reason (JsonObject *job);

/* the policy's last decision for the job */
const gchar *policy_decision (JsonObject *job);

/* the job object as one line of JSON, for messages */
gchar *job_text (JsonObject *job);

/* the time (microseconds since the epoch) of the last entry @state in the job's history; 0 = none
 */
gint64 history_time (JsonObject *job, const gchar *state);

/* the job's history holds the NULL-terminated @states in that order (others may come between) */
void assert_history (JsonObject *job, const gchar *first, ...) G_GNUC_NULL_TERMINATED;

/* fails, naming @what, unless @text contains @part */
void assert_contains (const gchar *text, const gchar *part, const gchar *what);

/* the speed of QEMU's only block job */
gint64 block_job_speed (VmrHarness *h);

/* whether QEMU's only block job is paused */
gboolean block_job_paused (VmrHarness *h);

/*
 * While the guest's load lasts (until @load_end_us, monotonic), the job is
 * in @state, with @speed in QEMU unless it is -1: checked at three chosen
 * points (now, half-way, two seconds before the end), not on every poll;
 * assert_left_after() then proves from the daemon's own history that the
 * job did not leave @state between them.
 */
void assert_state_at_points (VmrHarness *h, const gchar *id, const gchar *state, gint64 speed,
                             gint64 load_end_us);

/*
 * The job's history: it entered @state once and its next transition came
 * no earlier than a second before @done_us (wall clock), when the guest said
 * its load was over
 */
void assert_left_after (JsonObject *job, const gchar *state, gint64 done_us);

/*
 * The guest's rate on this machine now, from its own reports: the mean read
 * + write IOPS of its first @reports VMR-IOPS lines with I/O in them after
 * the first (which holds fio's start), waiting for them
 */
gdouble wait_guest_rate (VmrHarness *h, guint reports);

/*
 * The guest's load has started: wait_guest_rate() of two reports, from
 * which a test sets its policy's thresholds
 */
gdouble wait_load_baseline (VmrHarness *h);

/*
 * an IOPS threshold well below the guest's @baseline rate: a quarter of it,
 * so that the guest stays above it on a loaded machine, and well above an
 * idle guest's
 */
guint threshold_below (gdouble baseline);

/* writes @policy with @threshold for the word THRESHOLD in it, and reloads it */
void reload_policy_with (VmrHarness *h, const gchar *policy, guint threshold);

/* the monotonic time at which the guest's load of @runtime_s seconds ends */
gint64 load_end (VmrHarness *h, guint runtime_s);

/* the guest's mean IOPS from the first line on, for the test's log */
void note_guest_load (VmrHarness *h);

/* HH:MM of now + @minutes, local time, as the daemon reads windows */
gchar *clock_in (gint minutes);

/* a window from now + @from_min to now + @to_min */
gchar *window_around_now (gint from_min, gint to_min);

/* the value of @key in `policy show --json` */
gchar *shown_value (VmrHarness *h, const gchar *key);

/* `policy show` gives @key the value @expected */
void assert_shown (VmrHarness *h, const gchar *key, const gchar *expected);

/* a guest and the copy of its disk */
typedef struct {
    gchar *source;
    gchar *expected;
    gchar *dest;
    gchar *id;          /* the copy's job */
    guint threshold;    /* the policy's threshold, from the guest's rate */
    gdouble guest_iops; /* the guest's rate before the copy, from its own reports */
} GuestCopy;

void guest_copy_clear (GuestCopy *c);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (GuestCopy, guest_copy_clear)

/* the daemon on @policy, the guest booted with @job on a disk of @size and ready */
void idle_guest_start (VmrHarness *h, GuestCopy *c, const VmrHarnessGuestJob *job, gsize size,
                       const gchar *policy);

/*
 * The daemon on a policy without thresholds, the guest booted with @load on
 * a disk of @size; once the load runs, @policy with its THRESHOLD a quarter
 * of the guest's rate, reloaded. The copy is not started yet
 */
void busy_guest_start (VmrHarness *h, GuestCopy *c, const VmrHarnessGuestJob *load, gsize size,
                       const gchar *policy);

/*
 * busy_guest_start() on a BUSY_DISK_SIZE disk, then the migration of its disk:
 * a copy held back or slowed to 1 MiB/s through a load of about 10 s and
 * its hold still has seconds to run at 16 MiB/s once let go
 */
#define BUSY_DISK_SIZE (64 * MIB)
void busy_copy_start (VmrHarness *h, GuestCopy *c, const VmrHarnessGuestJob *load,
                      const gchar *policy);

/*
 * The verify guest's own check after a copy of its @size disk that
 * completed at @completed_us (wall clock): the pivot came while it still
 * wrote, and it read back right every block it wrote. Then QEMU quits, and
 * the destination holds the source's pattern beyond the region it wrote
 */
void assert_verify_guest (VmrHarness *h, gint64 completed_us, const gchar *source,
                          const gchar *dest, gsize size);

/*
 * The verify guest's VMR-VERIFIED line (after its VMR-DONE): it wrote
 * blocks and read back right every one. Returns the blocks it wrote
 */
guint64 assert_guest_verified (VmrHarness *h);

/*
 * QEMU quits, and @image holds the pattern of @source (of @size bytes)
 * beyond the region the verify guest wrote (its VMR-JOB line)
 */
void assert_beyond_verify_region (VmrHarness *h, const gchar *source, const gchar *image,
                                  gsize size);

/* `promtool check metrics` on @text: asserts it finds no problem, naming @what */
void assert_promtool_passes (const gchar *what, const gchar *text);

/* the value of the sample line of metrics @text that starts with @series ("name{labels}"), or -1 */
gdouble sample_value (const gchar *text, const gchar *series);

G_END_DECLS
