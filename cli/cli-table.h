/*
 * Column-aligned text tables for listings such as `virt-mirror jobs`.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _VmrCliTable VmrCliTable;

/* a table with the column titles given as NULL-terminated arguments */
VmrCliTable *vmr_cli_table_new (const gchar *first_title, ...) G_GNUC_NULL_TERMINATED;

void vmr_cli_table_free (VmrCliTable *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrCliTable, vmr_cli_table_free)

/*
 * Adds a row of as many cells as there are columns, as NULL-terminated
 * arguments; a NULL or empty cell is shown as "-". Cells are copied.
 */
void vmr_cli_table_add_row (VmrCliTable *self, const gchar *first_cell, ...);

/* the same with the cells in an array of n-columns entries */
void vmr_cli_table_add_rowv (VmrCliTable *self, const gchar *const *cells);

/*
 * The table as text: each line starts with @indent, columns are separated by
 * two spaces and the last one is not padded. Free with g_free().
 */
gchar *vmr_cli_table_to_string (VmrCliTable *self, const gchar *indent);

G_END_DECLS
