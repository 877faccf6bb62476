#define G_LOG_DOMAIN "vmr-test"

/*
 * The bash completion of virt-mirror, loaded into a real bash with
 * bash-completion, as a shell loads it (tests/docs/complete.sh sets the
 * COMP_* variables as bash does on Tab and calls the function `complete -p`
 * names): commands and options from the CLI's own help, domain names, disks
 * and job ids from a real daemon with a real QEMU attached and a copy
 * running; and no hang when the daemon is down or never answers. The copy
 * is cancelled at the end and the guest's writes are checked on its source.
 */

#include "harness.h"

#include <string.h>

/* for sorting a GPtrArray of strings */
static gint
vmr_compare_strings (gconstpointer a, gconstpointer b)
{
    return strcmp (*(const gchar *const *) a, *(const gchar *const *) b);
}

#define IMAGE_SIZE (24 * 1024 * 1024)
#define WRITES     20
/* the completion waits at most 2 s for the daemon (timeout 2); a shell start on top */
#define HUNG_DAEMON_LIMIT_US (5 * G_USEC_PER_SEC)

/* the candidates for the command line @words (the last one being completed) */
static GStrv
complete (VmrHarness *h, const gchar *const *words, gint64 *out_elapsed_us)
{
    g_autoptr (GPtrArray) argv = g_ptr_array_new ();
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    g_autoptr (GError) error = NULL;
    g_auto (GStrv) envp = g_get_environ ();
    gint status = 0;
    gint64 start;

    g_ptr_array_add (argv, (gpointer) g_getenv ("VMR_COMPLETE_HELPER"));
    g_ptr_array_add (argv, (gpointer) g_getenv ("VMR_BASH_COMPLETION"));
    g_ptr_array_add (argv, (gpointer) g_getenv ("VMR_COMPLETION_SCRIPT"));
    g_ptr_array_add (argv, (gpointer) g_getenv ("VMR_CLI"));
    for (guint i = 0; words[i] != NULL; i++)
        g_ptr_array_add (argv, (gpointer) words[i]);
    g_ptr_array_add (argv, NULL);
    envp = g_environ_setenv (envp, "VIRT_MIRROR_SOCKET", h->socket, TRUE);
    start = g_get_monotonic_time ();
    g_spawn_sync (h->dir, (gchar **) argv->pdata, envp, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                  &status, &error);
    if (out_elapsed_us != NULL)
        *out_elapsed_us = g_get_monotonic_time () - start;
    g_assert_no_error (error);
    if (!g_spawn_check_wait_status (status, NULL) || *err != '\0')
        vmr_fail ("completing '%s': status %d, stderr: %s", g_strjoinv (" ", (gchar **) words),
                  status, err);
    g_strchomp (out);
    return *out == '\0' ? g_new0 (gchar *, 1) : g_strsplit (out, "\n", -1);
}

/* asserts the candidates for @words are exactly @expected (space-separated, in order) */
static void
assert_completes (VmrHarness *h, const gchar *const *words, const gchar *expected)
{
    g_auto (GStrv) got = complete (h, words, NULL);
    g_autofree gchar *joined = g_strjoinv (" ", got);
    g_autofree gchar *line = g_strjoinv (" ", (gchar **) words);

    g_test_message ("'%s' -> '%s'", line, joined);
    if (!g_str_equal (joined, expected))
        vmr_fail ("completing '%s' gave '%s', expected '%s'", line, joined, expected);
}

/* the first word of each command `virt-mirror --help` lists, sorted */
static gchar *
commands_of_help (VmrHarness *h)
{
    g_autoptr (VmrCliResult) result = vmr_harness_cli (h, "--help", NULL);
    g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
    g_auto (GStrv) lines = NULL;
    gboolean in_list = FALSE;

    vmr_cli_result_assert_ok (result);
    lines = g_strsplit (result->out, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        g_auto (GStrv) words = NULL;

        if (g_str_equal (lines[i], "Commands:")) {
            in_list = TRUE;
            continue;
        }
        if (!in_list)
            continue;
        if (*lines[i] == '\0')
            break;
        words = g_strsplit (g_strstrip (lines[i]), " ", 2);
        if (!g_ptr_array_find_with_equal_func (names, words[0], g_str_equal, NULL))
            g_ptr_array_add (names, g_strdup (words[0]));
    }
    g_assert_cmpuint (names->len, >, 0);
    g_ptr_array_sort (names, (GCompareFunc) vmr_compare_strings);
    g_ptr_array_add (names, NULL);
    return g_strjoinv (" ", (gchar **) names->pdata);
}

/* the commands and their options: what --help and each command's options list */
static void
assert_completes_commands (VmrHarness *h)
{
    g_autofree gchar *commands = NULL;

    {
        const gchar *words[] = { "-p", NULL };

        assert_completes (h, words, "complete -F _virt_mirror virt-mirror");
    }
    /* the commands: what --help lists, the hidden one not */
    commands = commands_of_help (h);
    {
        const gchar *words[] = { "virt-mirror", "", NULL };

        assert_completes (h, words, commands);
    }
    {
        const gchar *words[] = { "virt-mirror", "mig", NULL };

        assert_completes (h, words, "migrate");
    }
    {
        const gchar *words[] = { "virt-mirror", "--json", "policy", "", NULL };

        assert_completes (h, words, "check show");
    }
    /* options, and their arguments */
    {
        const gchar *words[] = { "virt-mirror", "migrate", "--", NULL };

        assert_completes (h, words,
                          "--format --reuse --speed --manual-pivot --verify --wait --tls-creds "
                          "--connect --json --help");
    }
    {
        const gchar *words[] = { "virt-mirror", "evacuate", "--d", NULL };

        assert_completes (h, words, "--domains --dry-run");
    }
    {
        const gchar *words[] = { "virt-mirror", "migrate", "--format", "", NULL };

        assert_completes (h, words, "raw qcow2");
    }
    {
        const gchar *words[] = { "virt-mirror", "evacuate", "--domains", "", NULL };

        assert_completes (h, words, "vm");
    }
}

/* the names the daemon knows: domains, disks and the job @id */
static void
assert_completes_names (VmrHarness *h, const gchar *id)
{
    /* names from the daemon */
    {
        const gchar *words[] = { "virt-mirror", "migrate", "", NULL };

        assert_completes (h, words, "vm");
    }
    {
        const gchar *words[] = { "virt-mirror", "migrate", "--speed", "10M", "vm", "", NULL };

        assert_completes (h, words, "disk0");
    }
    {
        /* the DEST of a DISK: files of the current directory (the image and its expected copy) */
        const gchar *words[] = { "virt-mirror", "migrate", "vm", "disk0", "sour", NULL };

        assert_completes (h, words, "source.raw source.raw.expected.raw");
    }
    {
        /* a second pair: DISK, then DEST */
        const gchar *words[] = { "virt-mirror", "migrate", "vm", "disk0", "a.raw", "", NULL };

        assert_completes (h, words, "disk0");
    }
    {
        const gchar *words[] = { "virt-mirror", "policy", "show", "vm", "d", NULL };

        assert_completes (h, words, "disk0");
    }
    {
        const gchar *words[] = { "virt-mirror", "detach", "", NULL };

        assert_completes (h, words, "vm");
    }
    {
        const gchar *words[] = { "virt-mirror", "attach", "", NULL };

        assert_completes (h, words, "");
    }
    {
        const gchar *words[] = { "virt-mirror", "pause", "", NULL };

        assert_completes (h, words, id);
    }
    {
        /* watch takes any number of ids */
        const gchar *words[] = { "virt-mirror", "watch", "", NULL };
        const gchar *more[] = { "virt-mirror", "watch", id, "", NULL };

        assert_completes (h, words, id);
        assert_completes (h, more, id);
    }
    {
        const gchar *words[] = { "virt-mirror", "set-copy-mode", id, "", NULL };

        assert_completes (h, words, "active write-blocking");
    }
    {
        const gchar *words[] = { "virt-mirror", "report", "", NULL };

        assert_completes (h, words, id);
    }
    {
        const gchar *words[] = { "virt-mirror", "report", id, "--", NULL };

        assert_completes (h, words, "--svg --connect --json --help");
    }
    {
        /* the socket of the command line, over the environment's */
        const gchar *words[] = { "virt-mirror", "--connect", h->socket, "job", "", NULL };

        assert_completes (h, words, id);
    }
}

/* no daemon there, or one that never answers: no names, and no hang */
static void
assert_completes_without_daemon (VmrHarness *h)
{
    g_autofree gchar *silent = NULL;
    g_autofree gchar *missing = NULL;
    g_auto (GStrv) got = NULL;
    gint64 elapsed_us = 0;

    missing = vmr_harness_path (h, "missing.sock");
    silent = vmr_harness_silent_listener (h);
    {
        const gchar *words[] = { "virt-mirror", "-c", missing, "cancel", "", NULL };

        assert_completes (h, words, "");
    }
    {
        const gchar *words[] = { "virt-mirror", "-c", silent, "cancel", "", NULL };

        got = complete (h, words, &elapsed_us);
        g_assert_cmpuint (g_strv_length (got), ==, 0);
        g_test_message ("completion against a daemon that never answers: %.2f s", elapsed_us / 1e6);
        g_assert_cmpint (elapsed_us, <, HUNG_DAEMON_LIMIT_US);
    }
}

static void
test_complete (VmrHarness *h, gconstpointer data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) job = NULL;
    const gchar *bash_completion = g_getenv ("VMR_BASH_COMPLETION");

    if (bash_completion == NULL || !g_file_test (bash_completion, G_FILE_TEST_EXISTS)) {
        vmr_harness_skip (h, "bash-completion not found (the bash-completion package)");
        return;
    }
    if (!vmr_harness_require (h, "bash", "timeout", NULL))
        return;
    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 53);
    id = vmr_harness_start_slow_migration (h, &vm, NULL);
    vmr_harness_writer_write (vm.writer, WRITES);

    assert_completes_commands (h);
    assert_completes_names (h, id);
    assert_completes_without_daemon (h);

    job = vmr_harness_job_command (h, "cancel", id, NULL);
    vmr_harness_writer_write (vm.writer, WRITES);
    vmr_harness_assert_stays_on_source (h, "disk0", vm.source, "raw", vm.expected);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_HARNESS_ADD ("/completion/bash", NULL, test_complete);
    return g_test_run ();
}
