package controllers

import "sigs.k8s.io/controller-runtime/pkg/metrics"

// The operator's backup metrics. The alert SummaIndexBackupMissing
// (config/prometheus/summa-rules.yaml) fires when
// time() - last success > 2 * the schedule's period.
var (
	// backupsTotal counts the SummaIndexBackups that ended.
	backupsTotal = newCounterVec("summa_operator_backups_total",
		"SummaIndexBackups that ended, by namespace, index and phase (Completed, Failed).", "namespace", "index", "phase")
	// lastBackupSuccess is the completion time of the newest completed
	// backup, or the index's creation time while it has none.
	lastBackupSuccess = newIndexGauge("summa_operator_last_backup_success_timestamp_seconds",
		"Unix time of the newest completed backup of a SummaIndex with spec.backup (its creation time while none completed).")
	// backupSchedulePeriod is the longest gap between two runs of the
	// index's backup schedule.
	backupSchedulePeriod = newIndexGauge("summa_operator_backup_schedule_period_seconds",
		"Longest time between two runs of spec.backup.schedule of a SummaIndex (absent without a valid schedule).")
)

func init() {
	metrics.Registry.MustRegister(backupsTotal, lastBackupSuccess, backupSchedulePeriod)
}

// forgetBackupMetrics drops an index's backup gauges.
func forgetBackupMetrics(namespace, name string) {
	lastBackupSuccess.DeleteLabelValues(namespace, name)
	backupSchedulePeriod.DeleteLabelValues(namespace, name)
}
