"""Time-series plots of a running simulation and the profiler line, drawn in a
corner of the 3D viewport: the chosen channels (components/plot_settings.py), the draw callback
(draw.py), the sidebar's Plots panel (panel.py). The runner builds what they
plot (engine/plots.py); live/profile.py measures the frame."""
