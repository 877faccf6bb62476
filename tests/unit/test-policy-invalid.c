/*
 * The policy file refused: each problem of a table of files is reported as
 * FILE:LINE: [SECTION] KEY: what is wrong, every one of them, in the order of
 * the file.
 */
#define G_LOG_DOMAIN "vmr-test"

#include <string.h>

#include "policy.h"
#include "test-report.h"
#include "vmr-error.h"

#define NAME "test.conf"

/* ---- invalid files ---- */

typedef struct {
    guint line;
    const gchar *prefix;   /* what follows "test.conf:LINE: " */
    const gchar *fragment; /* a part of the message */
} ExpectedError;

typedef struct {
    const gchar *name;
    const gchar *text;
    ExpectedError errors[6]; /* in the order reported, up to the first with line 0 */
} InvalidCase;

static const InvalidCase invalid_cases[] = {
    /* lines that are no part of a key file */
    { "key before any section",
      "speed = 100M\n[defaults]\n",
      { { 1, "", "a key before the first section" } } },
    { "not key = value",
      "[defaults]\nspeed 100M\n",
      { { 2, "", "'speed 100M' is not a 'key = value' line" } } },
    { "broken section header",
      "[defaults\nspeed = 1M\n",
      { { 1, "", "'[defaults' is not a section header" } } },
    { "text after a header", "[defaults] # fast\n", { { 1, "", "is not a section header" } } },
    { "no key", "[defaults]\n= 100M\n", { { 2, "", "a value without a key" } } },
    /* a selector that is not UTF-8 aborted in GLib's glob matcher (found by the fuzzer) */
    { "section not UTF-8",
      "[defaults]\nspeed = 1M\n[domain web\xf9*]\nspeed = 2M\n",
      { { 3, "", "the line is not UTF-8" } } },
    { "key not UTF-8",
      "[defaults]\nspe\xff"
      "ed = 1M\n",
      { { 2, "", "the line is not UTF-8" } } },
    { "comment after a value",
      "[defaults]\nspeed = 100M # fast\n",
      { { 2, "[defaults] speed: ", "unknown unit" } } },

    /* sections */
    { "unknown section",
      "[default]\nspeed = 1M\n",
      { { 1, "[default] ", "unknown section (expected [defaults]" } } },
    { "domain without a glob", "[domain]\n", { { 1, "[domain] ", "unknown section" } } },
    { "disk without a name",
      "[domain web* disk]\n",
      { { 1, "[domain web* disk] ", "unknown section" } } },
    { "disk without a domain", "[disk vda]\n", { { 1, "[disk vda] ", "unknown section" } } },
    { "section names are case-sensitive",
      "[Defaults]\n",
      { { 1, "[Defaults] ", "unknown section" } } },
    { "repeated section",
      "[defaults]\nspeed = 1M\n[domain a]\nhold = 1s\n[defaults]\nhold = 2s\n",
      { { 5, "[defaults] ", "section repeated (first at line 1)" } } },
    { "key set twice",
      "[defaults]\nhold = 1s\n\nhold = 2s\n",
      { { 4, "[defaults] hold: ", "set twice in this section (first at line 2)" } } },

    /* keys */
    { "unknown key",
      "[defaults]\nspeed = 1M\nspeeed = 2M\n",
      { { 3, "[defaults] speeed: ", "unknown key" } } },
    { "unknown key in a domain section",
      "[domain web*]\n\n  max_delay = 1h\n",
      { { 3, "[domain web*] max_delay: ", "unknown key" } } },

    /* a bad value for each key */
    { "sample-interval not a duration",
      "[defaults]\nsample-interval = fast\n",
      { { 2, "[defaults] sample-interval: ", "invalid duration 'fast'" } } },
    { "sample-interval too short",
      "[defaults]\nsample-interval = 50ms\n",
      { { 2, "[defaults] sample-interval: ", "out of range (100ms to 60s)" } } },
    { "sample-interval too long",
      "[defaults]\nsample-interval = 2m\n",
      { { 2, "[defaults] sample-interval: ", "out of range" } } },
    { "speed not a rate",
      "[defaults]\nspeed = fast\n",
      { { 2, "[defaults] speed: ", "invalid size or rate 'fast'" } } },
    { "speed negative",
      "[defaults]\nspeed = -1M\n",
      { { 2, "[defaults] speed: ", "invalid size or rate" } } },
    { "speed unknown unit",
      "[defaults]\nspeed = 10X\n",
      { { 2, "[defaults] speed: ", "unknown unit 'x'" } } },
    { "speed empty", "[defaults]\nspeed =\n", { { 2, "[defaults] speed: ", "empty" } } },
    { "throttle-speed not a rate",
      "[defaults]\nthrottle-speed = slow\n",
      { { 2, "[defaults] throttle-speed: ", "invalid size or rate" } } },
    { "iops-throttle not a number",
      "[defaults]\niops-throttle = many\n",
      { { 2, "[defaults] iops-throttle: ", "'many' is not a whole number of IOPS" } } },
    { "iops-throttle fraction",
      "[defaults]\niops-throttle = 1.5\n",
      { { 2, "[defaults] iops-throttle: ", "not a whole number" } } },
    { "iops-throttle negative",
      "[defaults]\niops-throttle = -5\n",
      { { 2, "[defaults] iops-throttle: ", "not a whole number" } } },
    { "iops-throttle with a unit",
      "[defaults]\niops-throttle = 2K\n",
      { { 2, "[defaults] iops-throttle: ", "not a whole number" } } },
    { "iops-delay too large",
      "[defaults]\niops-delay = 4294967296\n",
      { { 2, "[defaults] iops-delay: ", "not a whole number" } } },
    { "resume-below 0",
      "[defaults]\nresume-below = 0\n",
      { { 2, "[defaults] resume-below: ", "'0' is not a percentage from 1 to 99" } } },
    { "resume-below 100%",
      "[defaults]\nresume-below = 100%\n",
      { { 2, "[defaults] resume-below: ", "not a percentage from 1 to 99" } } },
    { "resume-below space before %",
      "[defaults]\nresume-below = 80 %\n",
      { { 2, "[defaults] resume-below: ", "not a percentage" } } },
    { "resume-below only %",
      "[defaults]\nresume-below = %\n",
      { { 2, "[defaults] resume-below: ", "not a percentage" } } },
    { "resume-below fraction",
      "[defaults]\nresume-below = 0.8\n",
      { { 2, "[defaults] resume-below: ", "not a percentage" } } },
    { "hold not a duration",
      "[defaults]\nhold = forever\n",
      { { 2, "[defaults] hold: ", "invalid duration 'forever'" } } },
    { "hold negative", "[defaults]\nhold = -1s\n", { { 2, "[defaults] hold: ", "invalid" } } },
    { "max-delay in days",
      "[defaults]\nmax-delay = 1d\n",
      { { 2, "[defaults] max-delay: ", "unknown unit 'd'" } } },
    { "on-max-delay",
      "[defaults]\non-max-delay = abort\n",
      { { 2, "[defaults] on-max-delay: ", "'abort' is neither proceed nor fail" } } },
    { "window hours only",
      "[defaults]\nwindow = 22-06\n",
      { { 2, "[defaults] window: ", "'22-06' is not a time range like 22:00-06:00" } } },
    { "window hour 25",
      "[defaults]\nwindow = 25:00-06:00\n",
      { { 2, "[defaults] window: ", "not a time range" } } },
    { "window minute 60",
      "[defaults]\nwindow = 22:60-23:00\n",
      { { 2, "[defaults] window: ", "not a time range" } } },
    { "window past 24:00",
      "[defaults]\nwindow = 22:00-24:30\n",
      { { 2, "[defaults] window: ", "not a time range" } } },
    { "window one-digit minutes",
      "[defaults]\nwindow = 9:5-10:00\n",
      { { 2, "[defaults] window: ", "not a time range" } } },
    { "window with a sign",
      "[defaults]\nwindow = +9:00-10:00\n",
      { { 2, "[defaults] window: ", "not a time range" } } },
    { "window three ends",
      "[defaults]\nwindow = 22:00-06:00-07:00\n",
      { { 2, "[defaults] window: ", "not a time range" } } },
    { "window spaces around the dash",
      "[defaults]\nwindow = 22:00 - 06:00\n",
      { { 2, "[defaults] window: ", "'22:00' is not a time range" } } },
    { "window empty range",
      "[defaults]\nwindow = 06:00-06:00\n",
      { { 2, "[defaults] window: ", "'06:00-06:00' is empty" } } },
    { "window 24:00-00:00",
      "[defaults]\nwindow = 24:00-00:00\n",
      { { 2, "[defaults] window: ", "is empty" } } },
    { "window no value",
      "[defaults]\nwindow =\n",
      { { 2, "[defaults] window: ", "no time range given" } } },
    { "window only commas",
      "[defaults]\nwindow = , ,\n",
      { { 2, "[defaults] window: ", "no time range given" } } },

    /* combinations */
    { "iops-throttle above iops-delay",
      "[defaults]\niops-throttle = 3000\niops-delay = 2000\n",
      { { 2, "[defaults] iops-throttle: ",
          "iops-throttle (3000) must be below iops-delay (2000): a copy slows down before it "
          "stops" } } },
    { "iops-throttle equal to iops-delay",
      "[defaults]\niops-delay = 2000\niops-throttle = 2000\n",
      { { 3, "[defaults] iops-throttle: ", "must be below iops-delay" } } },
    { "iops-throttle in a section over iops-delay in [defaults]",
      "[defaults]\niops-delay = 2000\n[domain web*]\niops-throttle = 2500\n",
      { { 4, "[domain web*] iops-throttle: ",
          "iops-throttle (2500) must be below iops-delay (2000)" } } },
    { "iops-delay in a section under iops-throttle in [defaults]",
      "[defaults]\niops-throttle = 2000\n[domain db*]\niops-delay = 1500\n",
      { { 4,
          "[domain db*] iops-delay: ", "iops-throttle (2000) must be below iops-delay (1500)" } } },
    { "a disk section under its domain section",
      "[domain web*]\niops-delay = 1000\n[domain web* disk vda]\niops-throttle = 1200\n",
      { { 4, "[domain web* disk vda] iops-throttle: ", "must be below iops-delay (1000)" } } },
    { "throttle-speed above speed",
      "[defaults]\nspeed = 100M\niops-throttle = 1000\nthrottle-speed = 200M\n",
      { { 4,
          "[defaults] throttle-speed: ", "throttle-speed (200M) must be below speed (100M)" } } },
    { "throttle-speed equal to speed",
      "[defaults]\nthrottle-speed = 64M\nspeed = 64M\niops-throttle = 1000\n",
      { { 2, "[defaults] throttle-speed: ", "must be below speed" } } },
    { "built-in throttle-speed above a section's speed",
      "[domain web*]\nspeed = 16M\niops-throttle = 1000\n",
      { { 2, "[domain web*] speed: ", "throttle-speed (32M) must be below speed (16M)" } } },
    { "iops-throttle in a section over a slow speed in [defaults]",
      "[defaults]\nspeed = 16M\n[domain web*]\niops-throttle = 1000\n",
      { { 4,
          "[domain web*] iops-throttle: ", "throttle-speed (32M) must be below speed (16M)" } } },
    { "throttle-speed 0 with iops-throttle",
      "[defaults]\niops-throttle = 1000\nthrottle-speed = 0\n",
      { { 3,
          "[defaults] throttle-speed: ", "throttle-speed must be above 0 when iops-throttle" } } },
    { "iops-throttle in a section over throttle-speed 0",
      "[defaults]\nthrottle-speed = 0\n[domain a]\niops-throttle = 1000\n",
      { { 4, "[domain a] iops-throttle: ", "throttle-speed must be above 0" } } },

    /* the admission limits */
    { "max-parallel not a number",
      "[defaults]\nmax-parallel = many\n",
      { { 2, "[defaults] max-parallel: ", "'many' is not a whole number of copies" } } },
    { "max-parallel negative",
      "[defaults]\nmax-parallel = -1\n",
      { { 2, "[defaults] max-parallel: ", "not a whole number of copies from 0 to 65535" } } },
    { "max-parallel too large",
      "[defaults]\nmax-parallel = 65536\n",
      { { 2, "[defaults] max-parallel: ", "from 0 to 65535" } } },
    { "max-parallel-per-iothread with a unit",
      "[defaults]\nmax-parallel-per-iothread = 2x\n",
      { { 2, "[defaults] max-parallel-per-iothread: ", "'2x' is not a whole number" } } },
    { "max-parallel-per-domain a decimal",
      "[domain web*]\nmax-parallel-per-domain = 1.5\n",
      { { 2, "[domain web*] max-parallel-per-domain: ", "not a whole number" } } },
    { "max-parallel-per-destination empty",
      "[domain web* disk vda]\nmax-parallel-per-destination =\n",
      { { 2, "[domain web* disk vda] max-parallel-per-destination: ", "not a whole number" } } },
    { "max-parallel in a domain section",
      "[defaults]\nmax-parallel = 2\n[domain web*]\nhold = 1s\nmax-parallel = 3\n",
      { { 5, "[domain web*] max-parallel: ", "whole host: set it in [defaults]" } } },
    { "max-parallel in a disk section",
      "[domain web* disk vda]\nmax-parallel = 1\n",
      { { 2, "[domain web* disk vda] max-parallel: ", "set it in [defaults]" } } },
    { "keep-finished in a domain section",
      "[domain web*]\nkeep-finished = 1h\n",
      { { 2, "[domain web*] keep-finished: ", "whole host: set it in [defaults]" } } },
    { "control a mode that does not exist",
      "[defaults]\ncontrol = fast\n",
      { { 2, "[defaults] control: ", "'fast' is not one of static, adaptive" } } },
    { "guest-impact over 50%",
      "[domain web*]\nguest-impact = 60%\n",
      { { 2, "[domain web*] guest-impact: ", "not a percentage from 1 to 50" } } },
    { "min-speed 0",
      "[defaults]\nmin-speed = 0\n",
      { { 2, "[defaults] min-speed: ", "not above 0" } } },
    { "start-speed 0",
      "[defaults]\nstart-speed = 0\n",
      { { 2, "[defaults] start-speed: ", "not above 0" } } },
    { "min-progress a word",
      "[defaults]\nmin-progress = some\n",
      { { 2, "[defaults] min-progress: ", "'some' is not off nor a percentage from 1 to 400" } } },
    { "min-progress 0%",
      "[domain web*]\nmin-progress = 0%\n",
      { { 2, "[domain web*] min-progress: ", "not off nor a percentage from 1 to 400" } } },
    { "latency-floor over 100ms",
      "[defaults]\nlatency-floor = 1s\n",
      { { 2, "[defaults] latency-floor: ", "'1s' is out of range (0 to 100ms)" } } },
    { "max-harm under the highest guest-impact",
      "[domain web*]\nmax-harm = 40%\n",
      { { 2, "[domain web*] max-harm: ", "'40%' is not a percentage from 50 to 300" } } },
    { "min-speed above max-speed",
      "[defaults]\nmin-speed = 200M\nmax-speed = 100M\n",
      { { 2, "[defaults] min-speed: ", "min-speed (200M) must not be above max-speed (100M)" } } },
    { "latency-throttle not below latency-delay",
      "[defaults]\nlatency-delay = 10ms\n[domain db*]\nlatency-throttle = 20ms\n",
      { { 4, "[domain db*] latency-throttle: ", "must be below latency-delay" } } },
    { "latency-throttle not below latency-delay, one section",
      "[defaults]\nlatency-throttle = 20ms\nlatency-delay = 20ms\n",
      { { 2, "[defaults] latency-throttle: ",
          "latency-throttle (20ms) must be below latency-delay (20ms)" } } },
    { "throttle-speed 0 with latency-throttle",
      "[defaults]\nlatency-throttle = 10ms\nthrottle-speed = 0\n",
      { { 3, "[defaults] throttle-speed: ",
          "throttle-speed must be above 0 when latency-throttle is set" } } },
    { "latency-throttle in a section over throttle-speed 0",
      "[defaults]\nthrottle-speed = 0\n[domain a]\nlatency-throttle = 10ms\n",
      { { 4, "[domain a] latency-throttle: ",
          "throttle-speed must be above 0 when latency-throttle is set" } } },
    { "latency-throttle in a section, iops-throttle inherited, throttle-speed 0",
      "[defaults]\niops-throttle = 1000\nthrottle-speed = 0\n[domain a]\nlatency-throttle = 10ms\n",
      { { 3, "[defaults] throttle-speed: ", "when iops-throttle is set" },
        { 5, "[domain a] latency-throttle: ", "when latency-throttle is set" } } },
    { "both throttles and throttle-speed 0: one problem",
      "[defaults]\nthrottle-speed = 0\niops-throttle = 1000\nlatency-throttle = 10ms\n",
      { { 2, "[defaults] throttle-speed: ", "when iops-throttle is set" } } },
    { "throttle-speed above speed with latency-throttle",
      "[defaults]\nspeed = 16M\nlatency-throttle = 10ms\n",
      { { 2, "[defaults] speed: ", "throttle-speed (32M) must be below speed (16M)" } } },
    { "latency-throttle in a section over a slow speed in [defaults]",
      "[defaults]\nspeed = 16M\n[domain web*]\nlatency-throttle = 10ms\n",
      { { 4, "[domain web*] latency-throttle: ",
          "throttle-speed (32M) must be below speed (16M)" } } },
    { "latency-delay not a duration",
      "[defaults]\nlatency-delay = soon\n",
      { { 2, "[defaults] latency-delay: ", "" } } },
    { "converge-by a way that does not exist",
      "[defaults]\nconverge-by = magic\n",
      { { 2, "[defaults] converge-by: ", "not one of speed, write-blocking" } } },
    { "on-deadline a choice that does not exist",
      "[defaults]\non-deadline = panic\n",
      { { 2, "[defaults] on-deadline: ", "not one of continue, converge, fail" } } },
    { "granularity not a power of two",
      "[defaults]\ngranularity = 48K\n",
      { { 2, "[defaults] granularity: ", "not auto or a power of two from 512 to 64M" } } },
    { "granularity too small",
      "[defaults]\ngranularity = 256\n",
      { { 2, "[defaults] granularity: ", "not auto or a power of two from 512 to 64M" } } },
    { "granularity too large",
      "[defaults]\ngranularity = 128M\n",
      { { 2, "[defaults] granularity: ", "not auto or a power of two from 512 to 64M" } } },
    { "granularity not a size",
      "[defaults]\ngranularity = fine\n",
      { { 2, "[defaults] granularity: ", "fine" } } },
    { "buf-size too small",
      "[defaults]\nbuf-size = 32K\n",
      { { 2, "[defaults] buf-size: ", "not auto or a size from 64K to 1G" } } },
    { "buf-size too large",
      "[defaults]\nbuf-size = 2G\n",
      { { 2, "[defaults] buf-size: ", "not auto or a size from 64K to 1G" } } },
    { "buf-size not a size",
      "[defaults]\nbuf-size = big\n",
      { { 2, "[defaults] buf-size: ", "big" } } },
    { "reconnect-delay not whole seconds",
      "[defaults]\nreconnect-delay = 1500ms\n",
      { { 2, "[defaults] reconnect-delay: ", "not a whole number of seconds" } } },
    { "reconnect-delay over an hour",
      "[defaults]\nreconnect-delay = 2h\n",
      { { 2, "[defaults] reconnect-delay: ", "from 0 to 1h" } } },
    { "tls-creds a relative directory",
      "[defaults]\ntls-creds = pki/qemu\n",
      { { 2, "[defaults] tls-creds: ", "neither an absolute directory nor none" } } },
    { "verify neither yes nor no",
      "[defaults]\nverify = maybe\n",
      { { 2, "[defaults] verify: ", "not one of no, yes" } } },
    { "allowed-destinations a relative path",
      "[defaults]\nallowed-destinations = /srv/vm/**, srv/new/*\n",
      { { 2, "[defaults] allowed-destinations: ",
          "'srv/new/*' is neither an absolute path nor an NBD URI" } } },
    { "allowed-destinations with a '..'",
      "[defaults]\nallowed-destinations = /srv/vm/../etc/*\n",
      { { 2, "[defaults] allowed-destinations: ", "has a '..' component" } } },
    { "allowed-destinations another scheme",
      "[defaults]\nallowed-destinations = iscsi://store/*\n",
      { { 2, "[defaults] allowed-destinations: ", "the scheme must be nbd" } } },
    { "allowed-destinations empty between commas",
      "[defaults]\nallowed-destinations = /srv/vm/*,,/srv/new/*\n",
      { { 2, "[defaults] allowed-destinations: ", "an empty pattern" } } },
    { "allowed-destinations a directory",
      "[defaults]\nallowed-destinations = /srv/vm/\n",
      { { 2, "[defaults] allowed-destinations: ", "ends in '/': write /srv/vm/** for" } } },
    { "allowed-destinations in a domain section",
      "[defaults]\n[domain web*]\nallowed-destinations = /srv/**\n",
      { { 3, "[domain web*] allowed-destinations: ", "whole host: set it in [defaults]" } } },
    { "destination-symlinks neither allow nor refuse",
      "[defaults]\ndestination-symlinks = yes\n",
      { { 2, "[defaults] destination-symlinks: ", "'yes' is not one of allow, refuse" } } },
    { "verify in a disk section, spelled true",
      "[defaults]\n[domain db* disk vda]\nverify = true\n",
      { { 3, "[domain db* disk vda] verify: ", "not one of no, yes" } } },
    { "keep-finished-count not a number",
      "[defaults]\nkeep-finished-count = many\n",
      { { 2, "[defaults] keep-finished-count: ", "not a whole number of jobs" } } },

    /* the [cluster] section: one line per bad key, and the keys it must have */
    { "cluster without etcd",
      "[cluster]\nname = prod-a\n",
      { { 1, "[cluster] ", "etcd is missing" } } },
    { "cluster without a name",
      "[cluster]\netcd = http://127.0.0.1:2379\n",
      { { 1, "[cluster] ", "name is missing" } } },
    /* it would look protected and send every key in clear text */
    { "cluster's tls-creds beside http://",
      "[cluster]\nname = prod-a\n"
      "etcd = https://e1:2379, http://e2:2379\n"
      "tls-creds = /etc/virt-mirror/etcd\n",
      { { 4, "[cluster] tls-creds: ",
          "set beside the endpoint http://e2:2379, which is plain HTTP" } } },
    { "cluster's evacuate-to-nbd neither allow nor refuse",
      "[cluster]\nname = prod-a\netcd = http://e1:2379\nevacuate-to-nbd = yes\n",
      { { 4, "[cluster] evacuate-to-nbd: ", "'yes' is neither allow nor refuse" } } },
    { "cluster's bad keys",
      "[cluster]\n"
      "name = prod a\n"
      "etcd = http://e1:2379, ftp://e2:2379\n"
      "tls-creds = certs\n"
      "max-parallel = -1\n"
      "max-parallel-per-source = many\n"
      "max-parallel-per-destination = 70000\n",
      { { 2, "[cluster] name: ", "is not a name of 1 to 63 letters" },
        { 3, "[cluster] etcd: ", "'ftp://e2:2379' is not an etcd client URL" },
        { 4, "[cluster] tls-creds: ", "neither an absolute directory nor none" },
        { 5, "[cluster] max-parallel: ", "not a whole number of copies" },
        { 6, "[cluster] max-parallel-per-source: ", "not a whole number of copies" },
        { 7, "[cluster] max-parallel-per-destination: ", "not a whole number of copies" } } },
    { "cluster's lease, storage and unknown keys",
      "[cluster]\n"
      "name = prod-a\n"
      "etcd = http://127.0.0.1:2379\n"
      "lease-ttl = 1500ms\n"
      "storage = /srv/a, srv/b\n"
      "speed = 1M\n"
      "etcd = http://127.0.0.1:2380\n",
      { { 4, "[cluster] lease-ttl: ", "not a whole number of seconds from 2s to 1h" },
        { 5, "[cluster] storage: ", "'srv/b' is not an absolute directory" },
        { 6, "[cluster] speed: ", "unknown key" },
        { 7, "[cluster] etcd: ", "set twice in this section" } } },
    { "etcd without a port",
      "[cluster]\nname = a\netcd = http://127.0.0.1\n",
      { { 3, "[cluster] etcd: ", "is not an etcd client URL" } } },
    { "cluster twice",
      "[cluster]\nname = a\netcd = http://127.0.0.1:1\n[cluster]\nname = b\n",
      { { 4, "[cluster] ", "section repeated" } } },

    /* several problems, reported together in the order of the file */
    { "several errors",
      "[defaults]\n"
      "speed = fast\n"
      "hold = never\n"
      "[bogus]\n"
      "whatever = 1\n"
      "[domain web*]\n"
      "foo = 1\n"
      "garbage line\n"
      "iops-throttle = 5000\n"
      "iops-delay = 4000\n",
      { { 2, "[defaults] speed: ", "invalid size or rate" },
        { 3, "[defaults] hold: ", "invalid duration" },
        { 4, "[bogus] ", "unknown section" },
        { 7, "[domain web*] foo: ", "unknown key" },
        { 8, "", "'garbage line' is not a 'key = value' line" },
        { 9, "[domain web*] iops-throttle: ", "must be below iops-delay" } } },
};

static void
test_policy_invalid (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (invalid_cases); i++) {
        const InvalidCase *c = &invalid_cases[i];
        g_autoptr (GError) error = NULL;
        g_autoptr (VmrPolicy) policy = NULL;
        g_auto (GStrv) lines = NULL;
        guint n_expected = 0;

        g_test_message ("%s", c->name);
        policy = vmr_policy_load_from_data (NAME, c->text, &error);
        g_assert_null (policy);
        g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
        lines = g_strsplit (error->message, "\n", -1);
        while (n_expected < G_N_ELEMENTS (c->errors) && c->errors[n_expected].line > 0)
            n_expected++;
        if (g_strv_length (lines) != n_expected) {
            vmr_test_report_failure ("%s: %u errors, expected %u:\n%s", c->name,
                                     g_strv_length (lines), n_expected, error->message);
            continue;
        }
        for (guint e = 0; e < n_expected; e++) {
            const ExpectedError *x = &c->errors[e];
            g_autofree gchar *prefix = g_strdup_printf (NAME ":%u: %s", x->line, x->prefix);

            if (!g_str_has_prefix (lines[e], prefix) || strstr (lines[e], x->fragment) == NULL)
                vmr_test_report_failure ("%s: error %u is '%s', expected '%s...%s...'", c->name, e,
                                         lines[e], prefix, x->fragment);
        }
    }
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/policy/invalid", test_policy_invalid);
    return g_test_run ();
}
