"""The viewport's MuJoCo overlays: what they draw (engine/overlays.py computes it),
their switches (components/overlay_settings.py; popover.py, the header popover) and the draw callback."""
