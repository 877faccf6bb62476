#define G_LOG_DOMAIN "vmr-cli"

#include "cli-table.h"

#include <stdarg.h>

struct _VmrCliTable {
    GPtrArray *titles; /* gchar *, one per column */
    GPtrArray *rows;   /* GStrv, each with one cell per column */
};

VmrCliTable *
vmr_cli_table_new (const gchar *first_title, ...)
{
    VmrCliTable *self = g_new0 (VmrCliTable, 1);
    va_list args;

    self->titles = g_ptr_array_new_with_free_func (g_free);
    self->rows = g_ptr_array_new_with_free_func ((GDestroyNotify) g_strfreev);
    va_start (args, first_title);
    for (const gchar *title = first_title; title != NULL; title = va_arg (args, const gchar *))
        g_ptr_array_add (self->titles, g_strdup (title));
    va_end (args);
    return self;
}

void
vmr_cli_table_free (VmrCliTable *self)
{
    if (self == NULL)
        return;
    g_ptr_array_unref (self->titles);
    g_ptr_array_unref (self->rows);
    g_free (self);
}

void
vmr_cli_table_add_rowv (VmrCliTable *self, const gchar *const *cells)
{
    gchar **row = g_new0 (gchar *, self->titles->len + 1);

    for (guint i = 0; i < self->titles->len; i++) {
        const gchar *cell = cells[i];

        row[i] = g_strdup (cell != NULL && *cell != '\0' ? cell : "-");
    }
    g_ptr_array_add (self->rows, row);
}

void
vmr_cli_table_add_row (VmrCliTable *self, const gchar *first_cell, ...)
{
    g_autofree const gchar **cells = g_new0 (const gchar *, self->titles->len + 1);
    va_list args;

    /* NULL is a valid cell, so count columns rather than stop at the first NULL */
    va_start (args, first_cell);
    for (guint i = 0; i < self->titles->len; i++)
        cells[i] = i == 0 ? first_cell : va_arg (args, const gchar *);
    va_end (args);
    vmr_cli_table_add_rowv (self, cells);
}

static void
append_line (GString *out, const gchar *indent, gchar *const *cells, const gsize *widths,
             guint n_columns)
{
    g_string_append (out, indent);
    for (guint i = 0; i < n_columns; i++) {
        g_string_append (out, cells[i]);
        if (i + 1 == n_columns)
            break;
        for (gsize pad = g_utf8_strlen (cells[i], -1); pad < widths[i] + 2; pad++)
            g_string_append_c (out, ' ');
    }
    g_string_append_c (out, '\n');
}

gchar *
vmr_cli_table_to_string (VmrCliTable *self, const gchar *indent)
{
    guint n_columns = self->titles->len;
    g_autofree gsize *widths = g_new0 (gsize, n_columns);
    g_autoptr (GString) out = g_string_new (NULL);

    for (guint i = 0; i < n_columns; i++)
        widths[i] = g_utf8_strlen (g_ptr_array_index (self->titles, i), -1);
    for (guint r = 0; r < self->rows->len; r++) {
        gchar **row = g_ptr_array_index (self->rows, r);

        for (guint i = 0; i < n_columns; i++)
            widths[i] = MAX (widths[i], (gsize) g_utf8_strlen (row[i], -1));
    }
    append_line (out, indent, (gchar *const *) self->titles->pdata, widths, n_columns);
    for (guint r = 0; r < self->rows->len; r++)
        append_line (out, indent, g_ptr_array_index (self->rows, r), widths, n_columns);
    return g_string_free (g_steal_pointer (&out), FALSE);
}
