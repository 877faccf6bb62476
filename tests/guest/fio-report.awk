# fio-report.awk: turns fio's terse (version 3) status dumps into the test
# guest's console lines. The guest's /init runs it as
#
#   { fio --output-format=terse --terse-version=3 --status-interval=1 ... \
#         2>ERRFILE; echo "FIO-RC $?"; } |
#       awk -v job=load -v bs=8192 -v coe=1 -v errfile=ERRFILE -f fio-report.awk
#
# Variables:
#   job      "load" or "verify": which VMR-DONE line to print at the end
#   bs       block size in bytes, to turn fio's KiB counters into I/O counts
#   coe      1 when fio ran with continue_on_error, which appends
#            total_err;first_error to every terse line
#   errfile  fio's stderr, read at the end for the failure detail
#
# Every terse line holds counters since the start of the job; each one gives
#   VMR-IOPS <uptime_s> <read_iops> <write_iops> <mean_lat_usec>
# for the interval since the line before, timed by the guest's uptime when
# the line arrives. At "FIO-RC <exit status>" it prints
#   VMR-DONE load <total_ios> <errors>
#   VMR-VERIFIED <written_ios> <verified_ios>  then  VMR-DONE verify ok
#                                           or  VMR-DONE verify FAILED <detail>
# Any other line (fio's own warnings) is passed through unchanged.

function uptime_s(    line, f) {
	line = ""
	getline line < "/proc/uptime"
	close("/proc/uptime")
	split(line, f, " ")
	return f[1] + 0
}

function first_error_line(    line, found) {
	found = ""
	if (errfile == "")
		return ""
	while ((getline line < errfile) > 0) {
		print "fio-stderr: " line
		if (found == "" && line ~ /(verify|error|fio:)/)
			found = line
	}
	close(errfile)
	return found
}

BEGIN {
	FS = ";"
	if (bs <= 0)
		bs = 8192
	t_prev = uptime_s()
	r_prev = 0; w_prev = 0; lat_sum_prev = 0
	r_ios = 0; w_ios = 0; job_error = 0; total_err = 0
}

# terse v3: 5 error, read 6 io_kb 40 lat_mean_us, write 47 io_kb 81 lat_mean_us
$1 == "3" && NF >= 121 {
	now = uptime_s()
	r_ios = $6 * 1024 / bs
	w_ios = $47 * 1024 / bs
	lat_sum = $40 * r_ios + $81 * w_ios
	job_error = $5 + 0
	if (coe)
		total_err = $(NF - 1) + 0

	dt = now - t_prev
	# the final dump can follow the last periodic one closely: fold a
	# sliver of an interval into the next line rather than print noise
	if (dt < 0.1)
		next
	d_ios = (r_ios - r_prev) + (w_ios - w_prev)
	lat = d_ios > 0 ? (lat_sum - lat_sum_prev) / d_ios : 0
	if (lat < 0)
		lat = 0
	printf "VMR-IOPS %.2f %.0f %.0f %.1f\n", now, (r_ios - r_prev) / dt, (w_ios - w_prev) / dt, lat
	fflush()
	t_prev = now; r_prev = r_ios; w_prev = w_ios; lat_sum_prev = lat_sum
	next
}

$1 ~ /^FIO-RC / {
	split($1, f, " ")
	rc = f[2] + 0
	detail = first_error_line()
	if (job == "verify") {
		printf "VMR-VERIFIED %.0f %.0f\n", w_ios, r_ios
		if (rc == 0 && job_error == 0 && w_ios > 0 && r_ios == w_ios)
			print "VMR-DONE verify ok"
		else {
			if (detail == "" && rc != 0)
				detail = "fio exited with status " rc
			else if (detail == "" && job_error != 0)
				detail = "fio job error " job_error
			else if (detail == "")
				detail = sprintf("verified %.0f of %.0f written blocks", r_ios, w_ios)
			print "VMR-DONE verify FAILED " detail
		}
	} else {
		errors = total_err
		if (errors == 0 && (rc != 0 || job_error != 0))
			errors = 1
		printf "VMR-DONE %s %.0f %d\n", job, r_ios + w_ios, errors
	}
	fflush()
	next
}

{ print; fflush() }
