"""What the user sees: panels, the sidebar, menus, keymaps, preferences, viewport overlays."""
