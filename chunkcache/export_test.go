package chunkcache

// OpenedFiles returns how many object files d has opened for ReadRange.
func OpenedFiles(d *Disk) int64 { return d.files.opened.Load() }

// HeldFiles returns how many object files d holds open.
func HeldFiles(d *Disk) int { return d.files.held() }
