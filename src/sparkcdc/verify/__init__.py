"""``sparkcdc verify``: is each target table equal to its source table?"""
